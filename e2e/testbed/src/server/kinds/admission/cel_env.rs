//! The CEL side of admission policies: compiling expressions as the API server does when a
//! policy is written, the variables an expression sees (`object`, `oldObject`, `request`,
//! `namespaceObject`, `params`, `variables`), and evaluation, including the struct literals
//! (`Object{...}`, `JSONPatch{...}`) mutations build, which the interpreter cannot evaluate.
//!
//! `authorizer` is not offered: an expression that uses it fails to evaluate (and its
//! policy's failurePolicy decides).

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use kube_cel::KubeCelExt;
use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr};
use kube_cel::cel::objects::{Key, Map as CelMap};
use kube_cel::cel::parser::Parser;
use kube_cel::cel::{Context, Value as Cel};
use serde_json::{Map, Value};

/// Where a struct literal's type name is kept in the JSON it evaluates to (a key no Kubernetes
/// field can have); [`strip_types`] removes it.
pub const TYPE_KEY: &str = "\u{0}type";

thread_local! {
    /// A context with Kubernetes' CEL library; each evaluation opens a scope in it.
    static BASE: Context<'static> = {
        let mut ctx = Context::default();
        ctx.register_all();
        ctx.add_function("jsonpatch.escapeKey", escape_key);
        ctx
    };
}

/// `jsonpatch.escapeKey`: a map key as one JSON Pointer segment.
fn escape_key(key: Arc<String>) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// A parsed expression with its source.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub source: String,
    ast: IdedExpr,
}

/// Parses `source`; the error reads as kube-apiserver's (`compilation failed: ERROR: ...`).
pub fn compile(source: &str) -> Result<Compiled, String> {
    let parsed = catch_unwind(|| Parser::new().parse(source))
        .map_err(|_| "compilation failed: the expression could not be parsed".to_string())?;
    match parsed {
        Ok(ast) => Ok(Compiled {
            source: source.to_string(),
            ast,
        }),
        Err(e) => Err(format!(
            "compilation failed: {}",
            e.to_string().replace("\n| ", "\n | ")
        )),
    }
}

/// The variables one evaluation sees.
#[derive(Debug, Clone, Default)]
pub struct Bindings {
    vars: Vec<(String, Cel)>,
    /// Policy variables evaluated so far, and the errors of those that failed.
    variables: HashMap<Key, Cel>,
    variable_errors: Vec<(String, String)>,
}

impl Bindings {
    /// `object`, `oldObject`, `request`, `namespaceObject` and `params` (null when absent).
    pub fn new(
        object: Option<&Value>,
        old_object: Option<&Value>,
        request: &Value,
        namespace_object: Option<&Value>,
        params: Option<&Value>,
    ) -> Self {
        let or_null = |v: Option<&Value>| v.map(to_cel).unwrap_or(Cel::Null);
        Self {
            vars: vec![
                ("object".into(), or_null(object)),
                ("oldObject".into(), or_null(old_object)),
                ("request".into(), to_cel(request)),
                ("namespaceObject".into(), or_null(namespace_object)),
                ("params".into(), or_null(params)),
            ],
            variables: HashMap::new(),
            variable_errors: Vec::new(),
        }
    }

    /// Evaluates the policy's `variables` in order; each sees those before it. A variable
    /// that fails is reported only by the expressions that use it.
    pub fn with_variables(mut self, variables: &[(String, Compiled)]) -> Self {
        for (name, expr) in variables {
            match evaluate(expr, &self) {
                Ok(v) => {
                    self.variables
                        .insert(Key::String(Arc::new(name.clone())), v);
                }
                Err(e) => self.variable_errors.push((name.clone(), e)),
            }
        }
        self
    }

    fn with_scope<T>(&self, f: impl FnOnce(&Context<'_>) -> T) -> T {
        BASE.with(|base| {
            let mut scope = base.new_inner_scope();
            for (name, value) in &self.vars {
                scope.add_variable_from_value(name.clone(), value.clone());
            }
            scope.add_variable_from_value(
                "variables",
                Cel::Map(CelMap {
                    map: Arc::new(self.variables.clone()),
                }),
            );
            f(&scope)
        })
    }

    /// The error of a failed variable the expression uses, which is what it fails with.
    fn variable_error(&self, expr: &Compiled) -> Option<String> {
        self.variable_errors
            .iter()
            .find(|(name, _)| expr.source.contains(&format!("variables.{name}")))
            .map(|(_, e)| e.clone())
    }
}

/// Evaluates an expression to a CEL value; errors are the interpreter's words.
pub fn evaluate(expr: &Compiled, bindings: &Bindings) -> Result<Cel, String> {
    if let Some(e) = bindings.variable_error(expr) {
        return Err(e);
    }
    if contains_struct(&expr.ast) {
        return Err("struct literals are only supported in mutations".into());
    }
    bindings.with_scope(|ctx| resolve(ctx, &expr.ast))
}

/// Evaluates a boolean expression (validations, match conditions).
pub fn evaluate_bool(expr: &Compiled, bindings: &Bindings) -> Result<bool, String> {
    match evaluate(expr, bindings)? {
        Cel::Bool(b) => Ok(b),
        other => Err(format!(
            "expected a boolean result, got {}",
            other.type_of()
        )),
    }
}

/// Evaluates an expression to JSON; struct literals become objects carrying their type name
/// under [`TYPE_KEY`].
pub fn evaluate_json(expr: &Compiled, bindings: &Bindings) -> Result<Value, String> {
    if let Some(e) = bindings.variable_error(expr) {
        return Err(e);
    }
    bindings.with_scope(|ctx| build(ctx, &expr.ast))
}

fn resolve(ctx: &Context<'_>, ast: &IdedExpr) -> Result<Cel, String> {
    match catch_unwind(AssertUnwindSafe(|| ctx.resolve(ast))) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the expression could not be evaluated".into()),
    }
}

/// Evaluates `ast`, building struct literals (and lists, maps and conditionals holding them)
/// here and leaving everything else to the interpreter.
fn build(ctx: &Context<'_>, ast: &IdedExpr) -> Result<Value, String> {
    if !contains_struct(ast) {
        return from_cel(&resolve(ctx, ast)?);
    }
    match &ast.expr {
        Expr::Struct(s) => {
            let mut out = Map::new();
            out.insert(TYPE_KEY.into(), Value::String(s.type_name.clone()));
            for entry in &s.entries {
                if let EntryExpr::StructField(f) = &entry.expr {
                    out.insert(f.field.clone(), build(ctx, &f.value)?);
                }
            }
            Ok(Value::Object(out))
        }
        Expr::List(l) => l
            .elements
            .iter()
            .map(|e| build(ctx, e))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        Expr::Map(m) => {
            let mut out = Map::new();
            for entry in &m.entries {
                if let EntryExpr::MapEntry(e) = &entry.expr {
                    let key = match build(ctx, &e.key)? {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    out.insert(key, build(ctx, &e.value)?);
                }
            }
            Ok(Value::Object(out))
        }
        Expr::Call(c) if c.func_name == "_?_:_" && c.args.len() == 3 => {
            match resolve(ctx, &c.args[0])? {
                Cel::Bool(true) => build(ctx, &c.args[1]),
                Cel::Bool(false) => build(ctx, &c.args[2]),
                other => Err(format!("no such overload: _?_:_ on {}", other.type_of())),
            }
        }
        _ => Err("struct literals are only supported as values, list items and map values".into()),
    }
}

fn contains_struct(ast: &IdedExpr) -> bool {
    match &ast.expr {
        Expr::Struct(_) => true,
        Expr::Call(c) => {
            c.args.iter().any(contains_struct) || c.target.as_deref().is_some_and(contains_struct)
        }
        Expr::Comprehension(c) => [
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]
        .into_iter()
        .any(contains_struct),
        Expr::List(l) => l.elements.iter().any(contains_struct),
        Expr::Map(m) => m.entries.iter().any(|e| match &e.expr {
            EntryExpr::MapEntry(me) => contains_struct(&me.key) || contains_struct(&me.value),
            EntryExpr::StructField(f) => contains_struct(&f.value),
        }),
        Expr::Select(s) => contains_struct(&s.operand),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => false,
    }
}

/// Removes the type names [`evaluate_json`] left; returns the root's.
pub fn strip_types(v: &mut Value) -> Option<String> {
    match v {
        Value::Object(m) => {
            let t = m
                .remove(TYPE_KEY)
                .and_then(|t| t.as_str().map(String::from));
            for child in m.values_mut() {
                strip_types(child);
            }
            t
        }
        Value::Array(items) => {
            for item in items {
                strip_types(item);
            }
            None
        }
        _ => None,
    }
}

/// A JSON value as CEL sees an unstructured object.
pub fn to_cel(value: &Value) -> Cel {
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Cel::Int(i),
            (None, Some(u)) => Cel::UInt(u),
            _ => Cel::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(items) => Cel::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(m) => Cel::Map(CelMap {
            map: Arc::new(
                m.iter()
                    .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v)))
                    .collect(),
            ),
        }),
    }
}

/// A CEL value as JSON.
pub fn from_cel(value: &Cel) -> Result<Value, String> {
    Ok(match value {
        Cel::Null => Value::Null,
        Cel::Bool(b) => Value::Bool(*b),
        Cel::Int(i) => Value::from(*i),
        Cel::UInt(u) => Value::from(*u),
        Cel::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(|| format!("{f} cannot be represented in JSON"))?,
        Cel::String(s) => Value::String(s.to_string()),
        Cel::Bytes(b) => {
            use base64::Engine;
            Value::String(base64::engine::general_purpose::STANDARD.encode(b.as_slice()))
        }
        Cel::List(items) => Value::Array(items.iter().map(from_cel).collect::<Result<_, _>>()?),
        Cel::Map(m) => {
            let mut out = Map::new();
            for (k, v) in m.map.iter() {
                let key = match k {
                    Key::String(s) => s.to_string(),
                    Key::Int(i) => i.to_string(),
                    Key::Uint(u) => u.to_string(),
                    Key::Bool(b) => b.to_string(),
                };
                out.insert(key, from_cel(v)?);
            }
            Value::Object(out)
        }
        Cel::Timestamp(t) => Value::String(t.to_rfc3339()),
        Cel::Duration(d) => Value::String(format!("{}s", d.num_seconds())),
        other => {
            return Err(format!(
                "a {} cannot be represented in JSON",
                other.type_of()
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bindings(object: Value) -> Bindings {
        Bindings::new(
            Some(&object),
            None,
            &json!({"operation": "CREATE"}),
            None,
            None,
        )
    }

    #[test]
    fn parse_errors_read_as_the_servers() {
        let e = compile("object.spec.").unwrap_err();
        assert!(
            e.starts_with("compilation failed: ERROR: <input>:1:"),
            "{e}"
        );
    }

    #[test]
    fn booleans_see_object_and_request() {
        let b = bindings(json!({"spec": {"suspend": false}}));
        let c = compile("request.operation == 'CREATE' && !object.spec.suspend").unwrap();
        assert_eq!(evaluate_bool(&c, &b), Ok(true));
        let c = compile("has(object.spec.suspend) && object.spec.suspend").unwrap();
        assert_eq!(evaluate_bool(&c, &b), Ok(false));
        let c = compile("object.spec.missing").unwrap();
        assert!(evaluate_bool(&c, &b).is_err());
        let c = compile("1 + 1").unwrap();
        assert!(evaluate_bool(&c, &b).unwrap_err().contains("boolean"));
    }

    #[test]
    fn variables_compose_and_fail_lazily() {
        let vars = vec![
            ("a".to_string(), compile("object.spec.n + 1").unwrap()),
            ("b".to_string(), compile("variables.a * 2").unwrap()),
            ("bad".to_string(), compile("object.nope").unwrap()),
        ];
        let b = bindings(json!({"spec": {"n": 1}})).with_variables(&vars);
        assert_eq!(
            evaluate_bool(&compile("variables.b == 4").unwrap(), &b),
            Ok(true)
        );
        assert!(evaluate_bool(&compile("variables.bad == 1").unwrap(), &b).is_err());
    }

    #[test]
    fn struct_literals_build_typed_json() {
        let b = bindings(json!({"metadata": {"name": "x"}}));
        let c = compile("Object{spec: Object.spec{suspend: true, name: object.metadata.name}}")
            .unwrap();
        let mut v = evaluate_json(&c, &b).unwrap();
        assert_eq!(strip_types(&mut v), Some("Object".into()));
        assert_eq!(v, json!({"spec": {"suspend": true, "name": "x"}}));
        let c = compile(
            "[JSONPatch{op: 'add', path: '/a/' + jsonpatch.escapeKey('x/y'), value: [1, 2]}]",
        )
        .unwrap();
        let v = evaluate_json(&c, &b).unwrap();
        assert_eq!(v[0][TYPE_KEY], "JSONPatch");
        assert_eq!(v[0]["path"], "/a/x~1y");
        assert_eq!(v[0]["value"], json!([1, 2]));
        let c = compile("true ? Object{a: 1} : Object{a: 2}").unwrap();
        assert_eq!(evaluate_json(&c, &b).unwrap()["a"], 1);
        // A struct where only the builder can go is an error, not a panic.
        let c = compile("size(Object{a: 1}) == 1").unwrap();
        assert!(evaluate_json(&c, &b).is_err());
        assert!(evaluate(&c, &b).is_err());
    }
}
