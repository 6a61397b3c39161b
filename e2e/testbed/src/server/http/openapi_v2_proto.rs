//! `/openapi/v2` in protobuf (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`):
//! the JSON document of `openapi::v2` re-encoded as gnostic's `openapi.v2.Document` message,
//! which is the only form client-go's `OpenAPISchema()` reads. kubectl fetches it to validate
//! on the client what the server cannot validate for it — the items of a `kind: List` file.
//!
//! proto3 drops zero values (`minimum: 0`, `required: false`), as kube-apiserver's encoding
//! does. Values kept as YAML (`default`, `enum`, `example`, `x-` extensions) are written as
//! JSON, which is YAML.

use serde_json::{Map, Value};

/// The media type clients ask for.
const ACCEPTED: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// The media type of the answer (and the other name it is accepted under): kube-apiserver
/// writes `.v1.0` for `@v1.0` because Go's MIME parser rejects the `@`, and so would
/// client-go's when reading the answer's `Content-Type`.
pub const CONTENT_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// Whether an `Accept` header prefers the protobuf form to JSON: the first media range it
/// lists that the server can answer with is the protobuf one.
pub fn wants_protobuf(accept: &str) -> bool {
    for range in accept.split(',') {
        let media = range.split(';').next().unwrap_or("").trim();
        if media.eq_ignore_ascii_case(ACCEPTED) || media.eq_ignore_ascii_case(CONTENT_TYPE) {
            return true;
        }
        if matches!(media, "application/json" | "application/*" | "*/*") {
            return false;
        }
    }
    false
}

/// A protobuf message being written.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn tag(&mut self, field: u64, wire: u64) {
        self.varint((field << 3) | wire);
    }

    fn bytes(&mut self, field: u64, b: &[u8]) {
        self.tag(field, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn string(&mut self, field: u64, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    /// A string field from a JSON member, if it is a string.
    fn str_of(&mut self, field: u64, v: &Value, key: &str) {
        if let Some(s) = v.get(key).and_then(Value::as_str) {
            self.string(field, s);
        }
    }

    fn strings_of(&mut self, field: u64, v: &Value, key: &str) {
        for s in v.get(key).and_then(Value::as_array).into_iter().flatten() {
            if let Some(s) = s.as_str() {
                self.bytes(field, s.as_bytes());
            }
        }
    }

    fn bool_of(&mut self, field: u64, v: &Value, key: &str) {
        if v.get(key).and_then(Value::as_bool) == Some(true) {
            self.tag(field, 0);
            self.varint(1);
        }
    }

    fn int_of(&mut self, field: u64, v: &Value, key: &str) {
        if let Some(n) = v.get(key).and_then(Value::as_i64)
            && n != 0
        {
            self.tag(field, 0);
            self.varint(n as u64);
        }
    }

    fn double_of(&mut self, field: u64, v: &Value, key: &str) {
        if let Some(n) = v.get(key).and_then(Value::as_f64)
            && n != 0.0
        {
            self.tag(field, 1);
            self.0.extend_from_slice(&n.to_bits().to_le_bytes());
        }
    }

    fn message(&mut self, field: u64, m: Msg) {
        self.bytes(field, &m.0);
    }

    /// An `Any` (a value kept as YAML) from a JSON member.
    fn any_of(&mut self, field: u64, v: &Value, key: &str) {
        if let Some(x) = v.get(key) {
            self.message(field, any(x));
        }
    }

    fn anys_of(&mut self, field: u64, v: &Value, key: &str) {
        for x in v.get(key).and_then(Value::as_array).into_iter().flatten() {
            self.message(field, any(x));
        }
    }

    /// The `x-` members of a JSON object as `NamedAny` entries.
    fn extensions(&mut self, field: u64, v: &Value) {
        for (k, x) in v.as_object().into_iter().flatten() {
            if k.starts_with("x-") {
                let mut named = Msg::default();
                named.string(1, k);
                named.message(2, any(x));
                self.message(field, named);
            }
        }
    }
}

/// `Any { yaml = 2 }`.
fn any(v: &Value) -> Msg {
    let mut m = Msg::default();
    m.bytes(2, v.to_string().as_bytes());
    m
}

/// `{name = 1, value = 2}` entries of a JSON object, each value encoded by `f`.
fn named(field: u64, out: &mut Msg, v: Option<&Value>, f: fn(&Value) -> Msg) {
    for (k, x) in v.and_then(Value::as_object).into_iter().flatten() {
        let mut entry = Msg::default();
        entry.string(1, k);
        entry.message(2, f(x));
        out.message(field, entry);
    }
}

/// `openapi.v2.Document`.
pub fn encode(doc: &Value) -> Vec<u8> {
    let mut m = Msg::default();
    m.str_of(1, doc, "swagger");
    if let Some(info) = doc.get("info") {
        let mut i = Msg::default();
        i.str_of(1, info, "title");
        i.str_of(2, info, "version");
        i.str_of(3, info, "description");
        i.extensions(7, info);
        m.message(2, i);
    }
    m.str_of(3, doc, "host");
    m.str_of(4, doc, "basePath");
    m.strings_of(5, doc, "schemes");
    m.strings_of(6, doc, "consumes");
    m.strings_of(7, doc, "produces");
    if let Some(paths) = doc.get("paths") {
        let mut p = Msg::default();
        p.extensions(1, paths);
        let items = paths
            .as_object()
            .map(|o| {
                o.iter()
                    .filter(|(k, _)| !k.starts_with("x-"))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect::<Map<String, Value>>()
            })
            .map(Value::Object);
        named(2, &mut p, items.as_ref(), path_item);
        m.message(8, p);
    }
    if let Some(defs) = doc.get("definitions") {
        let mut d = Msg::default();
        named(1, &mut d, Some(defs), schema);
        m.message(9, d);
    }
    if let Some(params) = doc.get("parameters") {
        let mut d = Msg::default();
        named(1, &mut d, Some(params), parameter);
        m.message(10, d);
    }
    m.extensions(16, doc);
    m.0
}

/// `openapi.v2.Schema`.
fn schema(s: &Value) -> Msg {
    let mut m = Msg::default();
    m.str_of(1, s, "$ref");
    m.str_of(2, s, "format");
    m.str_of(3, s, "title");
    m.str_of(4, s, "description");
    m.any_of(5, s, "default");
    m.double_of(6, s, "multipleOf");
    m.double_of(7, s, "maximum");
    m.bool_of(8, s, "exclusiveMaximum");
    m.double_of(9, s, "minimum");
    m.bool_of(10, s, "exclusiveMinimum");
    m.int_of(11, s, "maxLength");
    m.int_of(12, s, "minLength");
    m.str_of(13, s, "pattern");
    m.int_of(14, s, "maxItems");
    m.int_of(15, s, "minItems");
    m.bool_of(16, s, "uniqueItems");
    m.int_of(17, s, "maxProperties");
    m.int_of(18, s, "minProperties");
    m.strings_of(19, s, "required");
    m.anys_of(20, s, "enum");
    match s.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            let mut a = Msg::default();
            a.tag(2, 0);
            a.varint(u64::from(*b));
            m.message(21, a);
        }
        Some(x @ Value::Object(_)) => {
            let mut a = Msg::default();
            a.message(1, schema(x));
            m.message(21, a);
        }
        _ => {}
    }
    match s.get("type") {
        Some(Value::String(t)) => {
            let mut t_item = Msg::default();
            t_item.string(1, t);
            m.message(22, t_item);
        }
        Some(Value::Array(ts)) => {
            let mut t_item = Msg::default();
            for t in ts.iter().filter_map(Value::as_str) {
                t_item.bytes(1, t.as_bytes());
            }
            m.message(22, t_item);
        }
        _ => {}
    }
    match s.get("items") {
        Some(x @ Value::Object(_)) => {
            let mut items = Msg::default();
            items.message(1, schema(x));
            m.message(23, items);
        }
        Some(Value::Array(xs)) => {
            let mut items = Msg::default();
            for x in xs {
                items.message(1, schema(x));
            }
            m.message(23, items);
        }
        _ => {}
    }
    for x in s
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        m.message(24, schema(x));
    }
    if let Some(props) = s.get("properties") {
        let mut p = Msg::default();
        named(1, &mut p, Some(props), schema);
        m.message(25, p);
    }
    m.str_of(26, s, "discriminator");
    m.bool_of(27, s, "readOnly");
    if let Some(docs) = s.get("externalDocs") {
        m.message(29, external_docs(docs));
    }
    m.any_of(30, s, "example");
    m.extensions(31, s);
    m
}

fn external_docs(v: &Value) -> Msg {
    let mut m = Msg::default();
    m.str_of(1, v, "description");
    m.str_of(2, v, "url");
    m.extensions(3, v);
    m
}

/// `openapi.v2.PathItem`.
fn path_item(v: &Value) -> Msg {
    let mut m = Msg::default();
    m.str_of(1, v, "$ref");
    for (field, verb) in [
        (2, "get"),
        (3, "put"),
        (4, "post"),
        (5, "delete"),
        (6, "options"),
        (7, "head"),
        (8, "patch"),
    ] {
        if let Some(op) = v.get(verb) {
            m.message(field, operation(op));
        }
    }
    parameters_items(&mut m, 9, v);
    m.extensions(10, v);
    m
}

/// `openapi.v2.Operation`.
fn operation(v: &Value) -> Msg {
    let mut m = Msg::default();
    m.strings_of(1, v, "tags");
    m.str_of(2, v, "summary");
    m.str_of(3, v, "description");
    if let Some(docs) = v.get("externalDocs") {
        m.message(4, external_docs(docs));
    }
    m.str_of(5, v, "operationId");
    m.strings_of(6, v, "produces");
    m.strings_of(7, v, "consumes");
    parameters_items(&mut m, 8, v);
    if let Some(responses) = v.get("responses") {
        let mut r = Msg::default();
        for (code, resp) in responses.as_object().into_iter().flatten() {
            if code.starts_with("x-") {
                continue;
            }
            let mut value = Msg::default();
            if let Some(reference) = resp.get("$ref").and_then(Value::as_str) {
                value.message(2, json_reference(reference));
            } else {
                value.message(1, response(resp));
            }
            let mut entry = Msg::default();
            entry.string(1, code);
            entry.message(2, value);
            r.message(1, entry);
        }
        r.extensions(2, responses);
        m.message(9, r);
    }
    m.strings_of(10, v, "schemes");
    m.bool_of(11, v, "deprecated");
    m.extensions(13, v);
    m
}

fn json_reference(reference: &str) -> Msg {
    let mut m = Msg::default();
    m.string(1, reference);
    m
}

/// `openapi.v2.Response`.
fn response(v: &Value) -> Msg {
    let mut m = Msg::default();
    m.str_of(1, v, "description");
    if let Some(s) = v.get("schema") {
        let mut item = Msg::default();
        item.message(1, schema(s));
        m.message(2, item);
    }
    m.extensions(5, v);
    m
}

/// The `parameters` member of a path item or operation as `ParametersItem` entries.
fn parameters_items(m: &mut Msg, field: u64, v: &Value) {
    for p in v
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let mut item = Msg::default();
        if let Some(reference) = p.get("$ref").and_then(Value::as_str) {
            item.message(2, json_reference(reference));
        } else {
            item.message(1, parameter(p));
        }
        m.message(field, item);
    }
}

/// `openapi.v2.Parameter`: a body parameter or one of the four non-body kinds.
fn parameter(v: &Value) -> Msg {
    let mut m = Msg::default();
    let place = v.get("in").and_then(Value::as_str).unwrap_or("");
    if place == "body" {
        let mut b = Msg::default();
        b.str_of(1, v, "description");
        b.str_of(2, v, "name");
        b.str_of(3, v, "in");
        b.bool_of(4, v, "required");
        if let Some(s) = v.get("schema") {
            b.message(5, schema(s));
        }
        b.extensions(6, v);
        m.message(1, b);
        return m;
    }
    // Query and formData have allowEmptyValue at 5, which shifts the fields after it by one.
    let (kind, shift) = match place {
        "header" => (1, 0),
        "formData" => (2, 1),
        "query" => (3, 1),
        _ => (4, 0),
    };
    let mut s = Msg::default();
    s.bool_of(1, v, "required");
    s.str_of(2, v, "in");
    s.str_of(3, v, "description");
    s.str_of(4, v, "name");
    if shift == 1 {
        s.bool_of(5, v, "allowEmptyValue");
    }
    s.str_of(5 + shift, v, "type");
    s.str_of(6 + shift, v, "format");
    if let Some(items) = v.get("items") {
        s.message(7 + shift, primitives_items(items));
    }
    s.str_of(8 + shift, v, "collectionFormat");
    s.any_of(9 + shift, v, "default");
    s.double_of(10 + shift, v, "maximum");
    s.bool_of(11 + shift, v, "exclusiveMaximum");
    s.double_of(12 + shift, v, "minimum");
    s.bool_of(13 + shift, v, "exclusiveMinimum");
    s.int_of(14 + shift, v, "maxLength");
    s.int_of(15 + shift, v, "minLength");
    s.str_of(16 + shift, v, "pattern");
    s.int_of(17 + shift, v, "maxItems");
    s.int_of(18 + shift, v, "minItems");
    s.bool_of(19 + shift, v, "uniqueItems");
    s.anys_of(20 + shift, v, "enum");
    s.double_of(21 + shift, v, "multipleOf");
    s.extensions(22 + shift, v);
    let mut non_body = Msg::default();
    non_body.message(kind, s);
    m.message(2, non_body);
    m
}

/// `openapi.v2.PrimitivesItems`.
fn primitives_items(v: &Value) -> Msg {
    let mut m = Msg::default();
    m.str_of(1, v, "type");
    m.str_of(2, v, "format");
    if let Some(items) = v.get("items") {
        m.message(3, primitives_items(items));
    }
    m.str_of(4, v, "collectionFormat");
    m.any_of(5, v, "default");
    m.anys_of(16, v, "enum");
    m.extensions(18, v);
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accept_picks_the_first_servable_range() {
        assert!(wants_protobuf(ACCEPTED));
        assert!(wants_protobuf(CONTENT_TYPE));
        assert!(wants_protobuf(&format!("{ACCEPTED}, application/json")));
        assert!(!wants_protobuf(&format!("application/json, {ACCEPTED}")));
        assert!(!wants_protobuf("application/json"));
        assert!(!wants_protobuf("*/*"));
        assert!(!wants_protobuf(""));
    }

    #[test]
    fn encodes_fields_with_their_numbers() {
        let doc =
            json!({"swagger": "2.0", "definitions": {"a.B": {"type": "object", "properties": {}}}});
        // Document{swagger=1:"2.0", definitions=9:{NamedSchema=1:{name=1:"a.B", value=2:
        // Schema{type=22:{value=1:"object"}, properties=25:{}}}}}
        let want: Vec<u8> = [
            &[0x0a, 3][..],
            b"2.0",
            &[0x4a, 23, 0x0a, 21, 0x0a, 3],
            b"a.B",
            &[0x12, 14, 0xb2, 0x01, 8, 0x0a, 6],
            b"object",
            &[0xca, 0x01, 0],
        ]
        .concat();
        assert_eq!(encode(&doc), want);
    }

    #[test]
    fn query_parameters_shift_past_allow_empty_value() {
        let p = parameter(&json!({"in": "query", "name": "watch", "type": "boolean"}));
        // Parameter{non_body=2:{query=3:{in=2:"query", name=4:"watch", type=6:"boolean"}}}
        let want: Vec<u8> = [
            &[0x12, 25, 0x1a, 23, 0x12, 5][..],
            b"query",
            &[0x22, 5],
            b"watch",
            &[0x32, 7],
            b"boolean",
        ]
        .concat();
        assert_eq!(p.0, want);
    }
}
