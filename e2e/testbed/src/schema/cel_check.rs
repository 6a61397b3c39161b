//! Compiling `x-kubernetes-validations` rules as kube-apiserver does at CRD admission: parse
//! errors in cel-go's wording, a light type check against the schema (undefined fields, the
//! type of `messageExpression`), and a static cost estimate.

use kube_cel::cel::common::ast::{Expr, IdedExpr, LiteralValue};
use kube_cel::cel::parser::Parser;
use serde_json::Value;

/// `StaticEstimatedCostLimit`: the largest estimated cost of one expression.
pub const PER_EXPRESSION_LIMIT: u64 = 10_000_000;
/// `StaticEstimatedCRDCostLimit`: the largest estimated cost of all rules of a schema.
pub const CRD_LIMIT: u64 = 100_000_000;
/// kube-apiserver's request size limit, which bounds unbounded lists and strings.
const MAX_REQUEST_BYTES: u64 = 3 * 1024 * 1024;

/// The estimated cost of one rule, at its field path.
#[derive(Debug, Clone)]
pub struct RuleCost {
    pub path: String,
    pub cost: u64,
}

/// What compiling a rule found.
#[derive(Debug, Default)]
pub struct Outcome {
    pub rule_error: Option<String>,
    pub message_expression_error: Option<String>,
    pub cost: u64,
    /// The estimated cost of the messageExpression (0 without one).
    pub message_cost: u64,
}

/// `getCostErrorMessage`.
pub fn cost_message(name: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let shown = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{name} exceeds budget by factor of {shown} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

/// Compiles `rule` (an `x-kubernetes-validations` entry) for a node whose schema is
/// `node`; `root` is the version's whole schema (for `self` at the root).
pub fn compile(rule: &Value, node: &Value, root: &Value) -> Outcome {
    let mut outcome = Outcome::default();
    let text = rule.get("rule").and_then(Value::as_str).unwrap_or("");
    let is_root = std::ptr::eq(node, root);
    match Parser::new().parse(text) {
        Err(e) => {
            outcome.rule_error = Some(format!("compilation failed: {}", go_issues(&e.to_string())));
        }
        Ok(expr) => {
            let mut checker = Checker {
                source: text,
                errors: Vec::new(),
                scopes: Vec::new(),
                is_root,
                reported: Vec::new(),
            };
            checker.infer(&expr, &Ty::Schema(node));
            if !checker.errors.is_empty() {
                outcome.rule_error =
                    Some(format!("compilation failed: {}", checker.errors.join("\n")));
            }
            outcome.cost = Cost { items: Vec::new() }.of(&expr, &Ty::Schema(node), &mut Vec::new());
        }
    }
    if let Some(msg) = rule
        .get("messageExpression")
        .and_then(Value::as_str)
        .filter(|m| !m.trim().is_empty())
    {
        match Parser::new().parse(msg) {
            Err(e) => {
                outcome.message_expression_error = Some(format!(
                    "messageExpression compilation failed: {}",
                    go_issues(&e.to_string())
                ));
            }
            Ok(expr) => {
                let mut checker = Checker {
                    source: msg,
                    errors: Vec::new(),
                    scopes: Vec::new(),
                    is_root,
                    reported: Vec::new(),
                };
                let ty = checker.infer(&expr, &Ty::Schema(node));
                if !checker.errors.is_empty() {
                    outcome.message_expression_error = Some(format!(
                        "messageExpression compilation failed: {}",
                        checker.errors.join("\n")
                    ));
                } else if !matches!(ty, Ty::String | Ty::Dyn) {
                    outcome.message_expression_error =
                        Some("messageExpression must evaluate to a string".into());
                } else {
                    outcome.message_cost =
                        Cost { items: Vec::new() }.of(&expr, &Ty::Schema(node), &mut Vec::new());
                }
            }
        }
    }
    outcome
}

/// cel-go prints snippet lines as ` | `; the Rust parser as `| `.
fn go_issues(text: &str) -> String {
    text.replace("\n| ", "\n | ")
}

/// Whether `path` (`.a.b`, `['x']`) names a field the schema declares.
pub fn field_path_valid(node: &Value, path: &str) -> bool {
    let mut cur = node;
    let mut rest = path;
    while !rest.is_empty() {
        let name;
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            name = r[..end].to_string();
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix("['") {
            let Some(end) = r.find("']") else {
                return false;
            };
            name = r[..end].to_string();
            rest = &r[end + 2..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else { return false };
            rest = &r[end + 1..];
            match cur.get("items") {
                Some(items) => {
                    cur = items;
                    continue;
                }
                None => return false,
            }
        } else {
            return false;
        }
        if name.is_empty() {
            return false;
        }
        match cur.get("properties").and_then(|p| p.get(&name)) {
            Some(child) => cur = child,
            None => match cur.get("additionalProperties").filter(|a| a.is_object()) {
                Some(a) => cur = a,
                None => return false,
            },
        }
    }
    true
}

/// A CEL type as far as the check needs it: schema-backed values are typed by their node.
#[derive(Clone, Debug)]
enum Ty<'a> {
    Dyn,
    Bool,
    Int,
    Double,
    String,
    Bytes,
    Null,
    List(Box<Ty<'a>>),
    Schema(&'a Value),
    /// The root `metadata`: only name and generateName are declared.
    Meta,
}

impl<'a> Ty<'a> {
    /// A schema node as its CEL type.
    fn from_schema(node: &'a Value) -> Ty<'a> {
        if node.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
            return Ty::Dyn;
        }
        match node.get("type").and_then(Value::as_str) {
            Some("string") => Ty::String,
            Some("integer") => Ty::Int,
            Some("number") => Ty::Double,
            Some("boolean") => Ty::Bool,
            Some("array" | "object") => Ty::Schema(node),
            _ => Ty::Dyn,
        }
    }

    fn element(&self) -> Ty<'a> {
        match self {
            Ty::List(e) => (**e).clone(),
            Ty::Schema(n) => match n.get("type").and_then(Value::as_str) {
                Some("array") => n.get("items").map(Ty::from_schema).unwrap_or(Ty::Dyn),
                Some("object") => Ty::String,
                _ => Ty::Dyn,
            },
            _ => Ty::Dyn,
        }
    }
}

/// Undoes CEL's escaping of property names (`__dash__` for `-`, ...).
fn unescape(field: &str) -> String {
    let mut out = field.to_string();
    for (from, to) in [
        ("__dash__", "-"),
        ("__dot__", "."),
        ("__slash__", "/"),
        ("__underscores__", "__"),
    ] {
        out = out.replace(from, to);
    }
    if let Some(inner) = out.strip_prefix("__").and_then(|s| s.strip_suffix("__"))
        && !inner.is_empty()
        && !inner.contains("__")
    {
        return inner.to_string();
    }
    out
}

struct Checker<'s, 'a> {
    source: &'s str,
    errors: Vec<String>,
    scopes: Vec<(String, Ty<'a>)>,
    is_root: bool,
    /// Byte offsets of selects already reported (the same field may be named twice).
    reported: Vec<usize>,
}

impl<'s, 'a> Checker<'s, 'a> {
    fn infer(&mut self, e: &IdedExpr, self_ty: &Ty<'a>) -> Ty<'a> {
        match &e.expr {
            Expr::Literal(l) => match l {
                LiteralValue::Boolean(_) => Ty::Bool,
                LiteralValue::Int(_) | LiteralValue::UInt(_) => Ty::Int,
                LiteralValue::Double(_) => Ty::Double,
                LiteralValue::String(_) => Ty::String,
                LiteralValue::Bytes(_) => Ty::Bytes,
                LiteralValue::Null => Ty::Null,
            },
            Expr::Ident(name) => {
                if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
                    return t.clone();
                }
                match (name.as_str(), self_ty) {
                    ("self" | "oldSelf", Ty::Schema(n)) => Ty::from_schema(n),
                    ("self" | "oldSelf", t) => t.clone(),
                    _ => Ty::Dyn,
                }
            }
            Expr::Select(sel) => {
                let operand = self.infer(&sel.operand, self_ty);
                let is_self_root = self.is_root
                    && matches!(&sel.operand.expr, Expr::Ident(n) if n == "self" || n == "oldSelf");
                let t = self.select(&operand, &sel.field, is_self_root);
                if sel.test { Ty::Bool } else { t }
            }
            Expr::Call(call) => {
                let target = call.target.as_ref().map(|t| self.infer(t, self_ty));
                let args: Vec<Ty> = call.args.iter().map(|a| self.infer(a, self_ty)).collect();
                call_type(&call.func_name, target.as_ref(), &args)
            }
            Expr::List(list) => {
                let elems: Vec<Ty> = list
                    .elements
                    .iter()
                    .map(|x| self.infer(x, self_ty))
                    .collect();
                Ty::List(Box::new(elems.first().cloned().unwrap_or(Ty::Dyn)))
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    if let kube_cel::cel::common::ast::EntryExpr::MapEntry(m) = &entry.expr {
                        self.infer(&m.key, self_ty);
                        self.infer(&m.value, self_ty);
                    }
                }
                Ty::Dyn
            }
            Expr::Comprehension(c) => {
                let range = self.infer(&c.iter_range, self_ty);
                let init = self.infer(&c.accu_init, self_ty);
                self.scopes.push((c.iter_var.clone(), range.element()));
                if let Some(v2) = &c.iter_var2 {
                    self.scopes.push((v2.clone(), Ty::Dyn));
                }
                self.scopes.push((c.accu_var.clone(), Ty::Dyn));
                self.infer(&c.loop_cond, self_ty);
                let step = self.infer(&c.loop_step, self_ty);
                self.infer(&c.result, self_ty);
                self.scopes
                    .truncate(self.scopes.len() - if c.iter_var2.is_some() { 3 } else { 2 });
                match init {
                    Ty::Bool => Ty::Bool,
                    Ty::List(_) => match step {
                        Ty::List(e) => Ty::List(e),
                        _ => Ty::List(Box::new(range.element())),
                    },
                    other => other,
                }
            }
            _ => Ty::Dyn,
        }
    }

    fn select(&mut self, operand: &Ty<'a>, field: &str, root_meta: bool) -> Ty<'a> {
        match operand {
            Ty::Schema(node) if node.get("type").and_then(Value::as_str) == Some("object") => {
                let name = unescape(field);
                if let Some(child) = node.get("properties").and_then(|p| p.get(&name)) {
                    if root_meta && name == "metadata" {
                        return Ty::Meta;
                    }
                    return Ty::from_schema(child);
                }
                if let Some(a) = node.get("additionalProperties").filter(|a| a.is_object()) {
                    return Ty::from_schema(a);
                }
                let embedded =
                    node.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true));
                if root_meta || embedded {
                    match name.as_str() {
                        "apiVersion" | "kind" => return Ty::String,
                        "metadata" => return Ty::Meta,
                        _ => {}
                    }
                }
                if node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
                    || node.get("additionalProperties") == Some(&Value::Bool(true))
                {
                    return Ty::Dyn;
                }
                self.undefined(field);
                Ty::Dyn
            }
            Ty::Meta => match field {
                "name" | "generateName" => Ty::String,
                _ => {
                    self.undefined(field);
                    Ty::Dyn
                }
            },
            _ => Ty::Dyn,
        }
    }

    /// Reports `undefined field` at the `.field` it is selected with.
    fn undefined(&mut self, field: &str) {
        let Some(offset) = self.find_select(field) else {
            self.errors
                .push(format!("ERROR: <input>:1:1: undefined field '{field}'"));
            return;
        };
        self.reported.push(offset);
        let line_start = self.source[..offset]
            .rfind('\n')
            .map(|i| i + 1)
            .unwrap_or(0);
        let line_no = self.source[..offset].matches('\n').count() + 1;
        let col = self.source[line_start..offset].chars().count();
        let line = self.source[line_start..].lines().next().unwrap_or("");
        self.errors.push(format!(
            "ERROR: <input>:{line_no}:{}: undefined field '{field}'\n | {line}\n | {}^",
            col + 1,
            ".".repeat(col)
        ));
    }

    /// The byte offset of the first `.field` (outside string literals) not yet reported.
    fn find_select(&self, field: &str) -> Option<usize> {
        let bytes = self.source.as_bytes();
        let mut quote: Option<u8> = None;
        let mut i = 0;
        while i < bytes.len() {
            let c = bytes[i];
            match quote {
                Some(q) => {
                    if c == b'\\' {
                        i += 1;
                    } else if c == q {
                        quote = None;
                    }
                }
                None if c == b'\'' || c == b'"' => quote = Some(c),
                None if c == b'.' => {
                    let rest = self.source[i + 1..].trim_start();
                    let start = self.source.len() - rest.len();
                    let ends = rest.strip_prefix(field).is_some_and(|after| {
                        !after.starts_with(|ch: char| ch.is_alphanumeric() || ch == '_')
                    });
                    if ends && !self.reported.contains(&i) && start > i {
                        return Some(i);
                    }
                }
                None => {}
            }
            i += 1;
        }
        None
    }
}

fn call_type<'a>(name: &str, target: Option<&Ty<'a>>, args: &[Ty<'a>]) -> Ty<'a> {
    let first = target.or(args.first());
    match name {
        "_==_"
        | "_!=_"
        | "_<_"
        | "_<=_"
        | "_>_"
        | "_>=_"
        | "_&&_"
        | "_||_"
        | "!_"
        | "@in"
        | "@not_strictly_false"
        | "startsWith"
        | "endsWith"
        | "contains"
        | "matches"
        | "isSorted"
        | "all"
        | "exists"
        | "exists_one" => Ty::Bool,
        "size" | "int" | "indexOf" | "lastIndexOf" | "compareTo" => Ty::Int,
        "double" => Ty::Double,
        "string" | "lowerAscii" | "upperAscii" | "trim" | "replace" | "format" | "join"
        | "substring" | "charAt" => Ty::String,
        "split" => Ty::List(Box::new(Ty::String)),
        "_+_" => match (first, args.get(1)) {
            (Some(Ty::String), Some(Ty::String)) => Ty::String,
            (Some(Ty::Int), Some(Ty::Int)) => Ty::Int,
            (Some(Ty::Double), Some(Ty::Double)) => Ty::Double,
            (Some(l @ Ty::List(_)), Some(Ty::List(_))) => l.clone(),
            _ => Ty::Dyn,
        },
        "_-_" | "_*_" | "_/_" | "_%_" | "-_" => match first {
            Some(t @ (Ty::Int | Ty::Double)) => t.clone(),
            _ => Ty::Dyn,
        },
        "_[_]" => match first {
            Some(t @ Ty::List(_)) => t.element(),
            Some(Ty::Schema(n)) if n.get("additionalProperties").is_some_and(Value::is_object) => n
                .get("additionalProperties")
                .map(Ty::from_schema)
                .unwrap_or(Ty::Dyn),
            _ => Ty::Dyn,
        },
        "_?_:_" => match (args.get(1), args.get(2)) {
            (Some(a), Some(b)) if std::mem::discriminant(a) == std::mem::discriminant(b) => {
                a.clone()
            }
            _ => Ty::Dyn,
        },
        _ => Ty::Dyn,
    }
}

/// A coarse version of cel-go's static cost estimate: comprehensions cost their range's
/// largest size times their body, string operations their largest length / 10.
struct Cost<'a> {
    /// The schema of each comprehension variable's elements, when known.
    items: Vec<(String, Option<&'a Value>)>,
}

impl<'a> Cost<'a> {
    fn of(&mut self, e: &'a IdedExpr, self_ty: &Ty<'a>, scopes: &mut Vec<(String, Ty<'a>)>) -> u64 {
        match &e.expr {
            Expr::Comprehension(c) => {
                let range_ty = type_of(&c.iter_range, self_ty, scopes);
                let n = match &c.iter_range.expr {
                    Expr::List(l) => l.elements.len() as u64,
                    _ => max_size(&range_ty),
                };
                let item_node = match &range_ty {
                    Ty::Schema(n) => n.get("items"),
                    _ => None,
                };
                scopes.push((c.iter_var.clone(), range_ty.element()));
                self.items.push((c.iter_var.clone(), item_node));
                let body =
                    self.of(&c.loop_step, self_ty, scopes) + self.of(&c.loop_cond, self_ty, scopes);
                scopes.pop();
                self.items.pop();
                self.of(&c.iter_range, self_ty, scopes)
                    .saturating_add(n.saturating_mul(body.max(1)))
            }
            Expr::Call(call) => {
                let mut cost = 1u64;
                if let Some(t) = &call.target {
                    cost = cost.saturating_add(self.of(t, self_ty, scopes));
                }
                for a in &call.args {
                    cost = cost.saturating_add(self.of(a, self_ty, scopes));
                }
                if call.func_name == "_+_"
                    && call.args.len() == 2
                    && matches!(type_of(&call.args[0], self_ty, scopes), Ty::String)
                {
                    // Concatenation copies both sides.
                    let len = self
                        .max_string(&call.args[0], self_ty, scopes)
                        .saturating_add(self.max_string(&call.args[1], self_ty, scopes));
                    cost = cost.saturating_add(len / 10);
                }
                if matches!(
                    call.func_name.as_str(),
                    "contains" | "startsWith" | "endsWith" | "matches" | "_==_" | "_!=_"
                ) {
                    // Comparisons cost by the shorter side, searches by the searched string.
                    let operands: Vec<&IdedExpr> = call
                        .target
                        .as_deref()
                        .into_iter()
                        .chain(call.args.iter())
                        .collect();
                    let is_string = operands
                        .first()
                        .is_some_and(|o| matches!(type_of(o, self_ty, scopes), Ty::String));
                    if is_string {
                        let lengths = operands.iter().map(|o| self.max_string(o, self_ty, scopes));
                        let len = if call.func_name.starts_with('_') {
                            lengths.min().unwrap_or(0)
                        } else {
                            self.max_string(operands[0], self_ty, scopes)
                        };
                        cost = cost.saturating_add(len / 10);
                    }
                }
                cost
            }
            Expr::Select(s) => 1 + self.of(&s.operand, self_ty, scopes),
            Expr::List(l) => l
                .elements
                .iter()
                .map(|x| self.of(x, self_ty, scopes))
                .sum::<u64>()
                .max(1),
            _ => 1,
        }
    }
}

/// The type of an expression for the cost estimate (no errors reported).
fn type_of<'a>(e: &'a IdedExpr, self_ty: &Ty<'a>, scopes: &[(String, Ty<'a>)]) -> Ty<'a> {
    let mut checker = Checker {
        source: "",
        errors: Vec::new(),
        scopes: scopes.to_vec(),
        is_root: false,
        reported: Vec::new(),
    };
    checker.infer(e, self_ty)
}

/// The largest number of elements a list (or map) may have: its schema's maxItems, else as
/// many as fit in a request. Lists the schema does not describe (results of functions) are
/// not sized (counted as one): the estimate stays below kube-apiserver's, never above.
fn max_size(t: &Ty) -> u64 {
    let Ty::Schema(n) = t else { return 1 };
    if let Some(max) = n
        .get("maxItems")
        .or(n.get("maxProperties"))
        .and_then(Value::as_u64)
    {
        return max;
    }
    let min_elem = n.get("items").map(min_json_size).unwrap_or(2);
    (MAX_REQUEST_BYTES - 2) / (min_elem + 1)
}

/// The smallest JSON a value of a schema can serialise to (`estimateMinSizeJSON`): objects
/// count their required properties without defaults.
fn min_json_size(node: &Value) -> u64 {
    match node.get("type").and_then(Value::as_str) {
        Some("string") => 2 + node.get("minLength").and_then(Value::as_u64).unwrap_or(0),
        Some("array") => 2,
        Some("object") => {
            let props = node.get("properties");
            let required = node.get("required").and_then(Value::as_array);
            2 + required
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .filter_map(|r| props.and_then(|p| p.get(r)).map(|p| (r, p)))
                .filter(|(_, p)| p.get("default").is_none())
                .map(|(r, p)| r.len() as u64 + min_json_size(p) + 4)
                .sum::<u64>()
        }
        _ => 1,
    }
}

impl<'a> Cost<'a> {
    /// The largest length of a string expression: its schema's maxLength when it names one.
    fn max_string(&self, e: &'a IdedExpr, self_ty: &Ty<'a>, scopes: &[(String, Ty<'a>)]) -> u64 {
        match &e.expr {
            Expr::Literal(LiteralValue::String(text)) => return text.len() as u64,
            // cel-go cannot bound what a conversion to string produces.
            Expr::Call(call) if call.func_name == "string" => return u64::MAX,
            Expr::Call(call) if call.func_name == "_+_" && call.args.len() == 2 => {
                return self
                    .max_string(&call.args[0], self_ty, scopes)
                    .saturating_add(self.max_string(&call.args[1], self_ty, scopes));
            }
            _ => {}
        }
        let node = match &e.expr {
            Expr::Ident(name) => self
                .items
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .and_then(|(_, s)| *s),
            Expr::Select(s) => match type_of(&s.operand, self_ty, scopes) {
                Ty::Schema(n) => n.get("properties").and_then(|p| p.get(&s.field)),
                _ => None,
            },
            _ => None,
        };
        node.and_then(|n| n.get("maxLength"))
            .and_then(Value::as_u64)
            .unwrap_or(MAX_REQUEST_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec() -> Value {
        json!({"type": "object", "properties": {"a": {"type": "integer"}}})
    }

    #[test]
    fn syntax_errors_are_worded_like_cel_go() {
        let s = spec();
        let o = compile(&json!({"rule": "self.a >"}), &s, &json!({}));
        let e = o.rule_error.unwrap_or_default();
        assert!(
            e.starts_with(
                "compilation failed: ERROR: <input>:1:9: Syntax error: mismatched input '<EOF>'"
            ),
            "{e}"
        );
        assert!(e.ends_with("\n | self.a >\n | ........^"), "{e}");
    }

    #[test]
    fn undefined_fields_and_message_expression_types_are_reported() {
        let s = spec();
        let o = compile(&json!({"rule": "self.b > 0"}), &s, &json!({}));
        assert_eq!(
            o.rule_error.as_deref(),
            Some(
                "compilation failed: ERROR: <input>:1:5: undefined field 'b'\n | self.b > 0\n | ....^"
            )
        );
        let o = compile(
            &json!({"rule": "self.a > 0", "messageExpression": "self.a"}),
            &s,
            &json!({}),
        );
        assert_eq!(
            o.message_expression_error.as_deref(),
            Some("messageExpression must evaluate to a string")
        );
        let o = compile(
            &json!({"rule": "self.a > 0", "messageExpression": "'a is ' + string(self.a)"}),
            &s,
            &json!({}),
        );
        assert!(o.message_expression_error.is_none() && o.rule_error.is_none());
    }

    #[test]
    fn string_conversions_in_messages_cannot_be_bounded() {
        let s = spec();
        let rule = json!({"rule": "self.a <= 5", "messageExpression": "'a ' + string(self.a) + ' is too big'"});
        let o = compile(&rule, &s, &json!({}));
        assert!(o.message_expression_error.is_none());
        assert!(o.message_cost > 100 * PER_EXPRESSION_LIMIT);
        let plain = json!({"rule": "self.a <= 5", "messageExpression": "'a is too big'"});
        assert!(compile(&plain, &s, &json!({})).message_cost < PER_EXPRESSION_LIMIT);
    }

    #[test]
    fn nested_loops_over_unbounded_lists_blow_the_budget() {
        let unbounded = json!({"type": "array", "items": {"type": "string"}});
        let rule = json!({"rule": "self.all(x, self.all(y, x == y || !x.contains(y)))"});
        assert!(compile(&rule, &unbounded, &json!({})).cost > 100 * PER_EXPRESSION_LIMIT);
        let bounded =
            json!({"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 20}});
        assert!(compile(&rule, &bounded, &json!({})).cost < PER_EXPRESSION_LIMIT);
    }
}
