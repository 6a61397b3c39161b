//! Decoding of Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`)
//! for the built-in kinds, as client-go's typed clients send them (e.g. `kubectl create
//! namespace|secret|configmap|serviceaccount|role|rolebinding`, `kubectl auth can-i`).
//! Responses are always JSON, which those clients accept.

use base64::Engine;
use serde_json::{Map, Value, json};

use crate::server::api::error::ApiError;

#[derive(Clone, Copy)]
enum Kind {
    Str,
    Bytes,
    Int,
    Bool,
    Time,
    MicroTime,
    IntOrString,
    Msg(&'static [F]),
    MapStr,
    MapBytes,
    RepStr,
    RepMsg(&'static [F]),
    Skip,
}

type F = (u32, &'static str, Kind);

const OWNER_REF: &[F] = &[
    (1, "kind", Kind::Str),
    (3, "name", Kind::Str),
    (4, "uid", Kind::Str),
    (5, "apiVersion", Kind::Str),
    (6, "controller", Kind::Bool),
    (7, "blockOwnerDeletion", Kind::Bool),
];
const OBJECT_META: &[F] = &[
    (1, "name", Kind::Str),
    (2, "generateName", Kind::Str),
    (3, "namespace", Kind::Str),
    (5, "uid", Kind::Str),
    (6, "resourceVersion", Kind::Str),
    (7, "generation", Kind::Int),
    (8, "creationTimestamp", Kind::Time),
    (9, "deletionTimestamp", Kind::Time),
    (10, "deletionGracePeriodSeconds", Kind::Int),
    (11, "labels", Kind::MapStr),
    (12, "annotations", Kind::MapStr),
    (13, "ownerReferences", Kind::RepMsg(OWNER_REF)),
    (14, "finalizers", Kind::RepStr),
    (17, "managedFields", Kind::Skip),
];
const NAMESPACE: &[F] = &[
    (1, "metadata", Kind::Msg(OBJECT_META)),
    (2, "spec", Kind::Msg(&[(1, "finalizers", Kind::RepStr)])),
    (3, "status", Kind::Skip),
];
const SECRET: &[F] = &[
    (1, "metadata", Kind::Msg(OBJECT_META)),
    (2, "data", Kind::MapBytes),
    (3, "type", Kind::Str),
    (4, "stringData", Kind::MapStr),
    (5, "immutable", Kind::Bool),
];
const CONFIG_MAP: &[F] = &[
    (1, "metadata", Kind::Msg(OBJECT_META)),
    (2, "data", Kind::MapStr),
    (3, "binaryData", Kind::MapBytes),
    (4, "immutable", Kind::Bool),
];
const PRIORITY_CLASS: &[F] = &[
    (1, "metadata", Kind::Msg(OBJECT_META)),
    (2, "value", Kind::Int),
    (3, "globalDefault", Kind::Bool),
    (4, "description", Kind::Str),
    (5, "preemptionPolicy", Kind::Str),
];
const LABEL_SELECTOR: &[F] = &[
    (1, "matchLabels", Kind::MapStr),
    (
        2,
        "matchExpressions",
        Kind::RepMsg(&[
            (1, "key", Kind::Str),
            (2, "operator", Kind::Str),
            (3, "values", Kind::RepStr),
        ]),
    ),
];
const PDB: &[F] = &[
    (1, "metadata", Kind::Msg(OBJECT_META)),
    (
        2,
        "spec",
        Kind::Msg(&[
            (1, "minAvailable", Kind::IntOrString),
            (2, "selector", Kind::Msg(LABEL_SELECTOR)),
            (3, "maxUnavailable", Kind::IntOrString),
            (4, "unhealthyPodEvictionPolicy", Kind::Str),
        ]),
    ),
    (3, "status", Kind::Skip),
];
const LEASE: &[F] = &[
    (1, "metadata", Kind::Msg(OBJECT_META)),
    (
        2,
        "spec",
        Kind::Msg(&[
            (1, "holderIdentity", Kind::Str),
            (2, "leaseDurationSeconds", Kind::Int),
            (3, "acquireTime", Kind::MicroTime),
            (4, "renewTime", Kind::MicroTime),
            (5, "leaseTransitions", Kind::Int),
            (6, "strategy", Kind::Str),
            (7, "preferredHolder", Kind::Str),
        ]),
    ),
];
const OBJECT_REF: &[F] = &[
    (1, "kind", Kind::Str),
    (2, "namespace", Kind::Str),
    (3, "name", Kind::Str),
    (4, "uid", Kind::Str),
    (5, "apiVersion", Kind::Str),
    (6, "resourceVersion", Kind::Str),
    (7, "fieldPath", Kind::Str),
];
const SERVICE_ACCOUNT: &[F] = &[
    (1, "metadata", Kind::Msg(OBJECT_META)),
    (2, "secrets", Kind::RepMsg(OBJECT_REF)),
    (
        3,
        "imagePullSecrets",
        Kind::RepMsg(&[(1, "name", Kind::Str)]),
    ),
    (4, "automountServiceAccountToken", Kind::Bool),
];
const POLICY_RULE: &[F] = &[
    (1, "verbs", Kind::RepStr),
    (2, "apiGroups", Kind::RepStr),
    (3, "resources", Kind::RepStr),
    (4, "resourceNames", Kind::RepStr),
    (5, "nonResourceURLs", Kind::RepStr),
];
const ROLE: &[F] = &[
    (1, "metadata", Kind::Msg(OBJECT_META)),
    (2, "rules", Kind::RepMsg(POLICY_RULE)),
];
const CLUSTER_ROLE: &[F] = &[
    (1, "metadata", Kind::Msg(OBJECT_META)),
    (2, "rules", Kind::RepMsg(POLICY_RULE)),
    (
        3,
        "aggregationRule",
        Kind::Msg(&[(1, "clusterRoleSelectors", Kind::RepMsg(LABEL_SELECTOR))]),
    ),
];
const BINDING: &[F] = &[
    (1, "metadata", Kind::Msg(OBJECT_META)),
    (
        2,
        "subjects",
        Kind::RepMsg(&[
            (1, "kind", Kind::Str),
            (2, "apiGroup", Kind::Str),
            (3, "name", Kind::Str),
            (4, "namespace", Kind::Str),
        ]),
    ),
    (
        3,
        "roleRef",
        Kind::Msg(&[
            (1, "apiGroup", Kind::Str),
            (2, "kind", Kind::Str),
            (3, "name", Kind::Str),
        ]),
    ),
];
const ACCESS_REVIEW: &[F] = &[
    (1, "metadata", Kind::Msg(OBJECT_META)),
    (
        2,
        "spec",
        Kind::Msg(&[
            (
                1,
                "resourceAttributes",
                Kind::Msg(&[
                    (1, "namespace", Kind::Str),
                    (2, "verb", Kind::Str),
                    (3, "group", Kind::Str),
                    (4, "version", Kind::Str),
                    (5, "resource", Kind::Str),
                    (6, "subresource", Kind::Str),
                    (7, "name", Kind::Str),
                ]),
            ),
            (
                2,
                "nonResourceAttributes",
                Kind::Msg(&[(1, "path", Kind::Str), (2, "verb", Kind::Str)]),
            ),
        ]),
    ),
    (3, "status", Kind::Skip),
];
const RULES_REVIEW: &[F] = &[
    (1, "metadata", Kind::Msg(OBJECT_META)),
    (2, "spec", Kind::Msg(&[(1, "namespace", Kind::Str)])),
    (3, "status", Kind::Skip),
];
const SUBJECT_REVIEW: &[F] = &[
    (1, "metadata", Kind::Msg(OBJECT_META)),
    (2, "status", Kind::Skip),
];
const EVENT: &[F] = &[
    (1, "metadata", Kind::Msg(OBJECT_META)),
    (2, "involvedObject", Kind::Msg(OBJECT_REF)),
    (3, "reason", Kind::Str),
    (4, "message", Kind::Str),
    (
        5,
        "source",
        Kind::Msg(&[(1, "component", Kind::Str), (2, "host", Kind::Str)]),
    ),
    (6, "firstTimestamp", Kind::Time),
    (7, "lastTimestamp", Kind::Time),
    (8, "count", Kind::Int),
    (9, "type", Kind::Str),
    (10, "eventTime", Kind::MicroTime),
    (
        11,
        "series",
        Kind::Msg(&[
            (1, "count", Kind::Int),
            (2, "lastObservedTime", Kind::MicroTime),
        ]),
    ),
    (12, "action", Kind::Str),
    (13, "related", Kind::Msg(OBJECT_REF)),
    (14, "reportingComponent", Kind::Str),
    (15, "reportingInstance", Kind::Str),
];

fn bad(msg: &str) -> ApiError {
    ApiError::bad_request(format!("cannot decode protobuf body: {msg}"))
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, ApiError> {
        let mut out = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self
                .buf
                .get(self.pos)
                .ok_or_else(|| bad("truncated varint"))?;
            self.pos += 1;
            out |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err(bad("varint too long"))
    }

    fn bytes(&mut self) -> Result<&'a [u8], ApiError> {
        let len = usize::try_from(self.varint()?).map_err(|_| bad("length"))?;
        let end = self
            .pos
            .checked_add(len)
            .filter(|e| *e <= self.buf.len())
            .ok_or_else(|| bad("truncated field"))?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    /// Next (field number, wire type, value); value is a varint or a byte slice.
    fn next(&mut self) -> Result<Option<(u32, Wire<'a>)>, ApiError> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let field = u32::try_from(key >> 3).map_err(|_| bad("field number"))?;
        let wire = match key & 7 {
            0 => Wire::Varint(self.varint()?),
            2 => Wire::Bytes(self.bytes()?),
            1 => {
                self.pos += 8;
                Wire::Varint(0)
            }
            5 => {
                self.pos += 4;
                Wire::Varint(0)
            }
            _ => return Err(bad("unsupported wire type")),
        };
        Ok(Some((field, wire)))
    }
}

enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn string(b: &[u8]) -> Result<String, ApiError> {
    String::from_utf8(b.to_vec()).map_err(|_| bad("invalid UTF-8"))
}

fn time(b: &[u8], micro: bool) -> Result<Value, ApiError> {
    let (mut secs, mut nanos) = (0i64, 0i64);
    let mut r = Reader { buf: b, pos: 0 };
    while let Some((f, w)) = r.next()? {
        if let Wire::Varint(v) = w {
            match f {
                1 => secs = v as i64,
                2 => nanos = v as i64,
                _ => {}
            }
        }
    }
    let ts = jiff::Timestamp::new(secs, i32::try_from(nanos).unwrap_or(0))
        .map_err(|_| bad("time out of range"))?;
    let fmt = if micro {
        "%Y-%m-%dT%H:%M:%S%.6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Ok(Value::String(ts.strftime(fmt).to_string()))
}

fn map_entry(b: &[u8]) -> Result<(String, &[u8]), ApiError> {
    let mut r = Reader { buf: b, pos: 0 };
    let (mut k, mut v): (String, &[u8]) = (String::new(), &[]);
    while let Some((f, w)) = r.next()? {
        if let Wire::Bytes(x) = w {
            match f {
                1 => k = string(x)?,
                2 => v = x,
                _ => {}
            }
        }
    }
    Ok((k, v))
}

fn message(b: &[u8], fields: &[F]) -> Result<Value, ApiError> {
    let mut out = Map::new();
    let mut r = Reader { buf: b, pos: 0 };
    while let Some((num, wire)) = r.next()? {
        let Some((_, name, kind)) = fields.iter().find(|(n, _, _)| *n == num) else {
            continue;
        };
        let name = (*name).to_string();
        match (kind, wire) {
            (Kind::Skip, _) => {}
            (Kind::Str, Wire::Bytes(x)) => {
                out.insert(name, Value::String(string(x)?));
            }
            (Kind::Bytes, Wire::Bytes(x)) => {
                out.insert(
                    name,
                    Value::String(base64::engine::general_purpose::STANDARD.encode(x)),
                );
            }
            (Kind::Int, Wire::Varint(v)) => {
                out.insert(name, json!(v as i64));
            }
            (Kind::Bool, Wire::Varint(v)) => {
                out.insert(name, json!(v != 0));
            }
            (Kind::Time, Wire::Bytes(x)) => {
                out.insert(name, time(x, false)?);
            }
            (Kind::MicroTime, Wire::Bytes(x)) => {
                out.insert(name, time(x, true)?);
            }
            (Kind::IntOrString, Wire::Bytes(x)) => {
                let v = message(
                    x,
                    &[
                        (1, "type", Kind::Int),
                        (2, "intVal", Kind::Int),
                        (3, "strVal", Kind::Str),
                    ],
                )?;
                let value = if v["type"].as_i64() == Some(1) {
                    v["strVal"].clone()
                } else {
                    json!(v["intVal"].as_i64().unwrap_or(0))
                };
                out.insert(name, value);
            }
            (Kind::Msg(sub), Wire::Bytes(x)) => {
                out.insert(name, message(x, sub)?);
            }
            (Kind::MapStr | Kind::MapBytes, Wire::Bytes(x)) => {
                let (k, v) = map_entry(x)?;
                let value = if matches!(kind, Kind::MapBytes) {
                    Value::String(base64::engine::general_purpose::STANDARD.encode(v))
                } else {
                    Value::String(string(v)?)
                };
                if let Value::Object(m) =
                    out.entry(name).or_insert_with(|| Value::Object(Map::new()))
                {
                    m.insert(k, value);
                }
            }
            (Kind::RepStr, Wire::Bytes(x)) => {
                if let Value::Array(a) = out.entry(name).or_insert_with(|| Value::Array(Vec::new()))
                {
                    a.push(Value::String(string(x)?));
                }
            }
            (Kind::RepMsg(sub), Wire::Bytes(x)) => {
                let item = message(x, sub)?;
                if let Value::Array(a) = out.entry(name).or_insert_with(|| Value::Array(Vec::new()))
                {
                    a.push(item);
                }
            }
            _ => return Err(bad("unexpected wire type")),
        }
    }
    Ok(Value::Object(out))
}

/// Whether a body is a Kubernetes protobuf envelope.
pub fn is_protobuf(body: &[u8]) -> bool {
    body.starts_with(b"k8s\0")
}

/// Decodes an enveloped protobuf object of a supported built-in kind into JSON.
pub fn decode(body: &[u8]) -> Result<Value, ApiError> {
    let inner = body
        .strip_prefix(b"k8s\0")
        .ok_or_else(|| bad("missing envelope"))?;
    let envelope = message(
        inner,
        &[
            (
                1,
                "typeMeta",
                Kind::Msg(&[(1, "apiVersion", Kind::Str), (2, "kind", Kind::Str)]),
            ),
            (2, "raw", Kind::Bytes),
        ],
    )?;
    let api_version = envelope["typeMeta"]["apiVersion"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let kind = envelope["typeMeta"]["kind"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let raw = base64::engine::general_purpose::STANDARD
        .decode(envelope["raw"].as_str().unwrap_or(""))
        .map_err(|_| bad("raw"))?;
    let fields: &[F] = match (api_version.as_str(), kind.as_str()) {
        ("v1", "Namespace") => NAMESPACE,
        ("v1", "Secret") => SECRET,
        ("v1", "ConfigMap") => CONFIG_MAP,
        ("v1", "Event") => EVENT,
        ("scheduling.k8s.io/v1", "PriorityClass") => PRIORITY_CLASS,
        ("policy/v1", "PodDisruptionBudget") => PDB,
        ("coordination.k8s.io/v1", "Lease") => LEASE,
        ("v1", "ServiceAccount") => SERVICE_ACCOUNT,
        ("rbac.authorization.k8s.io/v1", "Role") => ROLE,
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => CLUSTER_ROLE,
        ("rbac.authorization.k8s.io/v1", "RoleBinding" | "ClusterRoleBinding") => BINDING,
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => ACCESS_REVIEW,
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => RULES_REVIEW,
        ("authentication.k8s.io/v1", "SelfSubjectReview") => SUBJECT_REVIEW,
        _ => {
            return Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                format!(
                    "protobuf bodies of {api_version} {kind} are not supported by the testbed; send JSON"
                ),
            ));
        }
    };
    let mut obj = message(&raw, fields)?;
    obj["apiVersion"] = Value::String(api_version);
    obj["kind"] = Value::String(kind);
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(num: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![
            u8::try_from(num << 3 | 2).unwrap(),
            u8::try_from(payload.len()).unwrap(),
        ];
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn decodes_a_secret() {
        let meta = [
            field(1, b"s"),
            field(11, &[field(1, b"a"), field(2, b"b")].concat()),
        ]
        .concat();
        let secret = [
            field(1, &meta),
            field(2, &[field(1, b"k"), field(2, b"\x00\x01")].concat()),
            field(3, b"Opaque"),
        ]
        .concat();
        let type_meta = [field(1, b"v1"), field(2, b"Secret")].concat();
        let mut body = b"k8s\0".to_vec();
        body.extend([field(1, &type_meta), field(2, &secret)].concat());
        let v = decode(&body).unwrap();
        assert_eq!(v["metadata"]["name"], "s");
        assert_eq!(v["metadata"]["labels"]["a"], "b");
        assert_eq!(v["data"]["k"], "AAE=");
        assert_eq!(v["type"], "Opaque");
        assert_eq!(v["kind"], "Secret");
    }
}
