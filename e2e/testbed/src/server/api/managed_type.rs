//! The shape of a type as structured-merge-diff sees it: which map keys are declared struct
//! fields, which maps and lists are atomic, how list items are identified (`set` by value,
//! `map` by key fields), and which parts are untyped (deduced from the value).

use serde_json::Value;

/// A type in the structured-merge-diff sense.
#[derive(Debug, Clone)]
pub enum Type {
    Scalar(ScalarKind),
    /// No schema: maps are granular (every key is owned separately), lists are atomic.
    Untyped,
    Map(Box<MapType>),
    List(Box<ListType>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarKind {
    String,
    Numeric,
    Boolean,
    Any,
}

/// A struct (declared fields) and/or a map (element type for other keys).
#[derive(Debug, Clone, Default)]
pub struct MapType {
    pub fields: Vec<Field>,
    /// The type of keys that are not declared fields; `None`: such keys are errors.
    pub elements: Option<Type>,
    pub atomic: bool,
}

/// A declared struct field.
#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    pub ty: Type,
    /// Present in the zero value of the built-in Go type (a value struct, or a field without
    /// `omitempty`): an empty object for struct types, `null` otherwise.
    pub in_zero: bool,
}

#[derive(Debug, Clone)]
pub struct ListType {
    pub items: Type,
    pub kind: ListKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListKind {
    Atomic,
    Set,
    Map(Vec<String>),
}

/// The untyped element type (a `static` so resolved views can borrow it).
pub static UNTYPED: Type = Type::Untyped;
static ATOMIC: ListKind = ListKind::Atomic;

/// A type resolved against a value (untyped types take the value's shape).
#[derive(Debug, Clone, Copy)]
pub enum Node<'a> {
    Scalar(ScalarKind),
    Map(MapView<'a>),
    List(ListView<'a>),
}

#[derive(Debug, Clone, Copy)]
pub struct MapView<'a> {
    pub fields: &'a [Field],
    pub elements: Option<&'a Type>,
    pub atomic: bool,
}

#[derive(Debug, Clone, Copy)]
pub struct ListView<'a> {
    pub items: &'a Type,
    pub kind: &'a ListKind,
}

impl<'a> MapView<'a> {
    pub fn field(&self, name: &str) -> Option<&'a Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The type of `key`, and whether it is a declared field.
    pub fn child(&self, key: &str) -> Option<(&'a Type, bool)> {
        match self.field(key) {
            Some(f) => Some((&f.ty, true)),
            None => self.elements.map(|t| (t, false)),
        }
    }
}

impl Type {
    pub fn resolve(&self, value: Option<&Value>) -> Node<'_> {
        match self {
            Type::Scalar(k) => Node::Scalar(*k),
            Type::Map(m) => Node::Map(MapView {
                fields: &m.fields,
                elements: m.elements.as_ref(),
                atomic: m.atomic,
            }),
            Type::List(l) => Node::List(ListView {
                items: &l.items,
                kind: &l.kind,
            }),
            Type::Untyped => match value {
                Some(Value::Object(_)) => Node::Map(MapView {
                    fields: &[],
                    elements: Some(&UNTYPED),
                    atomic: false,
                }),
                Some(Value::Array(_)) => Node::List(ListView {
                    items: &UNTYPED,
                    kind: &ATOMIC,
                }),
                _ => Node::Scalar(ScalarKind::Any),
            },
        }
    }

    /// The zero value of this type as a Go struct would serialise it (built-ins).
    pub fn zero(&self) -> Value {
        match self {
            Type::Map(m) if !m.fields.is_empty() => {
                let mut out = serde_json::Map::new();
                for f in m.fields.iter().filter(|f| f.in_zero) {
                    out.insert(f.name.clone(), f.ty.zero());
                }
                Value::Object(out)
            }
            _ => Value::Null,
        }
    }
}

// Builders, for the built-in type tables and tests.

pub fn string() -> Type {
    Type::Scalar(ScalarKind::String)
}
pub fn number() -> Type {
    Type::Scalar(ScalarKind::Numeric)
}
pub fn boolean() -> Type {
    Type::Scalar(ScalarKind::Boolean)
}
pub fn any_scalar() -> Type {
    Type::Scalar(ScalarKind::Any)
}

/// A struct; fields named with a leading `*` are value structs or non-omitempty fields
/// (present in the Go zero value).
pub fn strukt(fields: Vec<(&str, Type)>) -> Type {
    Type::Map(Box::new(MapType {
        fields: fields
            .into_iter()
            .map(|(n, ty)| {
                let (name, in_zero) = match n.strip_prefix('*') {
                    Some(rest) => (rest, true),
                    None => (n, false),
                };
                Field {
                    name: name.to_string(),
                    ty,
                    in_zero,
                }
            })
            .collect(),
        elements: None,
        atomic: false,
    }))
}

/// A struct owned as a whole (`+structType=atomic`).
pub fn atomic_struct() -> Type {
    Type::Map(Box::new(MapType {
        atomic: true,
        elements: Some(Type::Untyped),
        ..MapType::default()
    }))
}

pub fn map_of(elements: Type) -> Type {
    Type::Map(Box::new(MapType {
        fields: Vec::new(),
        elements: Some(elements),
        atomic: false,
    }))
}

pub fn atomic_list() -> Type {
    list(Type::Untyped, ListKind::Atomic)
}

pub fn set_of(items: Type) -> Type {
    list(items, ListKind::Set)
}

pub fn map_list(keys: &[&str], items: Type) -> Type {
    list(
        items,
        ListKind::Map(keys.iter().map(|k| k.to_string()).collect()),
    )
}

fn list(items: Type, kind: ListKind) -> Type {
    Type::List(Box::new(ListType { items, kind }))
}

/// Lets every struct in `ty` take undeclared keys as untyped fields (built-in tables are
/// not complete; an unknown field must never make an object untrackable).
pub fn lenient(mut ty: Type) -> Type {
    fn walk(ty: &mut Type) {
        match ty {
            Type::Map(m) => {
                if m.elements.is_none() {
                    m.elements = Some(Type::Untyped);
                }
                for f in &mut m.fields {
                    walk(&mut f.ty);
                }
            }
            Type::List(l) => walk(&mut l.items),
            _ => {}
        }
    }
    walk(&mut ty);
    ty
}

/// `metadata` (ObjectMeta), as every kind has it.
pub fn object_meta() -> Type {
    lenient(strukt(vec![
        ("name", string()),
        ("generateName", string()),
        ("namespace", string()),
        ("selfLink", string()),
        ("uid", string()),
        ("resourceVersion", string()),
        ("generation", number()),
        ("*creationTimestamp", string()),
        ("deletionTimestamp", string()),
        ("deletionGracePeriodSeconds", number()),
        ("labels", map_of(string())),
        ("annotations", map_of(string())),
        ("ownerReferences", map_list(&["uid"], atomic_struct())),
        ("finalizers", set_of(string())),
        ("managedFields", atomic_list()),
    ]))
}

/// A root kind: `apiVersion`, `kind`, `metadata` and the given fields.
pub fn kind_with(mut fields: Vec<(&str, Type)>) -> Type {
    let mut all = vec![
        ("apiVersion", string()),
        ("kind", string()),
        ("*metadata", object_meta()),
    ];
    all.append(&mut fields);
    strukt(all)
}

/// The type of a custom resource from its version's `openAPIV3Schema`.
pub fn from_openapi(schema: Option<&Value>) -> Type {
    let mut root = match schema {
        Some(s) => convert(s),
        None => Type::Untyped,
    };
    let meta = [
        ("apiVersion", string()),
        ("kind", string()),
        ("metadata", object_meta()),
    ];
    match &mut root {
        Type::Map(m) => {
            for (name, ty) in meta {
                m.fields.retain(|f| f.name != name);
                m.fields.push(Field {
                    name: name.into(),
                    ty,
                    in_zero: false,
                });
            }
        }
        _ => {
            root = Type::Map(Box::new(MapType {
                fields: meta
                    .into_iter()
                    .map(|(name, ty)| Field {
                        name: name.into(),
                        ty,
                        in_zero: false,
                    })
                    .collect(),
                elements: Some(Type::Untyped),
                atomic: false,
            }));
        }
    }
    root
}

fn convert(s: &Value) -> Type {
    let preserve = s["x-kubernetes-preserve-unknown-fields"] == Value::Bool(true);
    if s["x-kubernetes-int-or-string"] == Value::Bool(true) {
        return any_scalar();
    }
    if s["x-kubernetes-embedded-resource"] == Value::Bool(true) && s.get("properties").is_none() {
        return Type::Untyped;
    }
    match s["type"].as_str() {
        Some("object") => {
            let props = s["properties"].as_object();
            let additional = s.get("additionalProperties").filter(|a| a.is_object());
            let atomic = s["x-kubernetes-map-type"] == "atomic";
            if props.is_none_or(|p| p.is_empty()) && additional.is_none() && !atomic {
                // An object without properties is a map of anything.
                return Type::Untyped;
            }
            let fields = props
                .map(|p| {
                    p.iter()
                        .map(|(name, sub)| Field {
                            name: name.clone(),
                            ty: convert(sub),
                            in_zero: false,
                        })
                        .collect()
                })
                .unwrap_or_default();
            let elements = match additional {
                Some(a) => Some(convert(a)),
                None if preserve => Some(Type::Untyped),
                None => None,
            };
            Type::Map(Box::new(MapType {
                fields,
                elements,
                atomic,
            }))
        }
        Some("array") => {
            let items = s.get("items").map(convert).unwrap_or(Type::Untyped);
            let kind = match s["x-kubernetes-list-type"].as_str() {
                Some("set") => ListKind::Set,
                Some("map") => ListKind::Map(
                    s["x-kubernetes-list-map-keys"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|k| k.as_str().map(String::from))
                        .collect(),
                ),
                _ => ListKind::Atomic,
            };
            list(items, kind)
        }
        Some("string") => string(),
        Some("integer") | Some("number") => number(),
        Some("boolean") => boolean(),
        _ if preserve => Type::Untyped,
        _ => Type::Untyped,
    }
}

/// A resource type's object structure, built on first use: building it from a large CRD
/// schema (Baton's Workload) on every write cost more than the write itself.
#[derive(Debug, Clone, Default)]
pub struct TypeCache(pub std::sync::OnceLock<Type>);
