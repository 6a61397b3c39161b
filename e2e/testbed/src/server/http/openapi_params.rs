//! The query and path parameters kube-apiserver documents on custom resource operations, with
//! the descriptions it publishes and the names of their shared `/openapi/v2` definitions.

/// One documented parameter.
pub struct Param {
    pub name: &'static str,
    /// `query` or `path`.
    pub location: &'static str,
    /// The JSON type of its value.
    pub type_: &'static str,
    pub description: &'static str,
    /// The key under `/openapi/v2` `parameters` it is shared as; None when written inline.
    pub v2_key: Option<&'static str>,
}

const fn query(
    name: &'static str,
    type_: &'static str,
    description: &'static str,
    v2_key: Option<&'static str>,
) -> Param {
    Param {
        name,
        location: "query",
        type_,
        description,
        v2_key,
    }
}

pub const ALLOW_WATCH_BOOKMARKS: Param = query(
    "allowWatchBookmarks",
    "boolean",
    "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored.",
    Some("allowWatchBookmarks-HC2hJt-J"),
);

pub const CONTINUE: Param = query(
    "continue",
    "string",
    "The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize. If the specified continue value is no longer valid whether due to expiration (generally five to fifteen minutes) or a configuration change on the server, the server will respond with a 410 ResourceExpired error together with a continue token. If the client needs a consistent list, it must restart their list without the continue field. Otherwise, the client may send another list request with the token received with the 410 error, the server will respond with a list starting from the next key, but from the latest snapshot, which is inconsistent from the previous list results - objects that are created, modified, or deleted after the first list request will be included in the response, as long as their keys are after the \"next key\".\n\nThis field is not supported when watch is true. Clients may start a watch from the last resourceVersion value returned by the server and not miss any modifications.",
    Some("continue-QfD61s0i"),
);

pub const FIELD_SELECTOR: Param = query(
    "fieldSelector",
    "string",
    "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
    Some("fieldSelector-xIcQKXFG"),
);

pub const LABEL_SELECTOR: Param = query(
    "labelSelector",
    "string",
    "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
    Some("labelSelector-5Zw57w4C"),
);

pub const LIMIT: Param = query(
    "limit",
    "integer",
    "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results. Setting a limit may return fewer than the requested amount of items (up to zero items) in the event all requested objects are filtered out and clients should only use the presence of the continue field to determine whether more results are available. Servers may choose not to support the limit argument and will return all of the available results. If limit is specified and the continue field is empty, clients may assume that no more results are available. This field is not supported if watch is true.\n\nThe server guarantees that the objects returned when using continue will be identical to issuing a single list call without a limit - that is, no objects created, modified, or deleted after the first request is issued will be included in any subsequent continued requests. This is sometimes referred to as a consistent snapshot, and ensures that a client that is using limit to receive smaller chunks of a very large result can ensure they see all possible objects. If objects are updated during a chunked list the version of the object that was present at the time the first list result was calculated is returned.",
    Some("limit-1NfNmdNH"),
);

pub const RESOURCE_VERSION: Param = query(
    "resourceVersion",
    "string",
    "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset",
    Some("resourceVersion-5WAnf1kx"),
);

pub const RESOURCE_VERSION_MATCH: Param = query(
    "resourceVersionMatch",
    "string",
    "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset",
    Some("resourceVersionMatch-t8XhRHeC"),
);

pub const SEND_INITIAL_EVENTS: Param = query(
    "sendInitialEvents",
    "boolean",
    "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic \"Bookmark\" event  will be sent. The bookmark will report the ResourceVersion (RV) corresponding to the set of objects, and be marked with `\"k8s.io/initial-events-end\": \"true\"` annotation. Afterwards, the watch stream will proceed as usual, sending watch events corresponding to changes (subsequent to the RV) to objects watched.\n\nWhen `sendInitialEvents` option is set, we require `resourceVersionMatch` option to also be set. The semantic of the watch request is as following: - `resourceVersionMatch` = NotOlderThan\n  is interpreted as \"data at least as new as the provided `resourceVersion`\"\n  and the bookmark event is send when the state is synced\n  to a `resourceVersion` at least as fresh as the one provided by the ListOptions.\n  If `resourceVersion` is unset, this is interpreted as \"consistent read\" and the\n  bookmark event is send when the state is synced at least to the moment\n  when request started being processed.\n- `resourceVersionMatch` set to any other value or unset\n  Invalid error is returned.\n\nDefaults to true if `resourceVersion=\"\"` or `resourceVersion=\"0\"` (for backward compatibility reasons) and to false otherwise.",
    Some("sendInitialEvents-rLXlEK_k"),
);

pub const SHARD_SELECTOR: Param = query(
    "shardSelector",
    "string",
    "shardSelector restricts the list of returned objects using a CEL-based shard selector expression. The format uses the shardRange() function combined with || (logical OR) to specify one or more hash ranges:\n\n  shardRange(object.metadata.uid, '0x0', '0x8000000000000000')\n  shardRange(object.metadata.uid, '0x0', '0x8000000000000000') || shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')\n\nField paths use CEL-style object-rooted syntax (e.g. \"object.metadata.uid\"), NOT the fieldSelector format (\"metadata.uid\"). Currently supported paths:\n  - object.metadata.uid\n  - object.metadata.namespace\n\nhexStart and hexEnd are single-quoted CEL string literals with a '0x' prefix, defining the inclusive lower and exclusive upper bounds over the 64-bit FNV-1a hash space. The full range is [0x0, 0x10000000000000000), where the exclusive upper bound equals 2^64.\n\nExamples:\n  2-shard split:\n    shard 0: shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')\n    shard 1: shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')\n  4-shard split:\n    shard 0: shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000')\n    shard 1: shardRange(object.metadata.uid, '0x4000000000000000', '0x8000000000000000')\n    shard 2: shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')\n    shard 3: shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')\n\nThis is an alpha field and requires enabling the ShardedListAndWatch feature gate.",
    Some("shardSelector-Kgyki_3_"),
);

pub const TIMEOUT_SECONDS: Param = query(
    "timeoutSeconds",
    "integer",
    "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity.",
    Some("timeoutSeconds-yvYezaOC"),
);

pub const WATCH: Param = query(
    "watch",
    "boolean",
    "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.",
    Some("watch-XNNPZGbK"),
);

pub const DRY_RUN: Param = query(
    "dryRun",
    "string",
    "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed",
    None,
);

pub const FIELD_MANAGER: Param = query(
    "fieldManager",
    "string",
    "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.",
    Some("fieldManager-Qy4HdaTW"),
);

pub const FIELD_VALIDATION: Param = query(
    "fieldValidation",
    "string",
    "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.",
    None,
);

pub const NAMESPACE: Param = Param {
    name: "namespace",
    location: "path",
    type_: "string",
    description: "object name and auth scope, such as for teams and projects",
    v2_key: Some("namespace-vgWSWtn3"),
};

pub const PRETTY: Param = query(
    "pretty",
    "string",
    "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).",
    Some("pretty-tJGM1-ng"),
);

pub const GRACE_PERIOD_SECONDS: Param = query(
    "gracePeriodSeconds",
    "integer",
    "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately.",
    Some("gracePeriodSeconds--K5HaBOS"),
);

pub const IGNORE_STORE_READ_ERROR_WITH_CLUSTER_BREAKING_POTENTIAL: Param = query(
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "boolean",
    "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error. A resource is considered corrupt if it can not be retrieved from the underlying storage successfully because of a) its data can not be transformed e.g. decryption failure, or b) it fails to decode into an object. NOTE: unsafe deletion ignores finalizer constraints, skips precondition checks, and removes the object from the storage. WARNING: This may potentially break the cluster if the workload associated with the resource being unsafe-deleted relies on normal deletion flow. Use only if you REALLY know what you are doing. The default value is false, and the user must opt in to enable it",
    Some("ignoreStoreReadErrorWithClusterBreakingPotential-QbNkfIqj"),
);

pub const ORPHAN_DEPENDENTS: Param = query(
    "orphanDependents",
    "boolean",
    "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both.",
    Some("orphanDependents-uRB25kX5"),
);

pub const PROPAGATION_POLICY: Param = query(
    "propagationPolicy",
    "string",
    "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground.",
    Some("propagationPolicy-6jk3prlO"),
);

pub const FIELD_MANAGER_PATCH: Param = query(
    "fieldManager",
    "string",
    "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint. This field is required for apply requests (application/apply-patch) but optional for non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch).",
    Some("fieldManager-7c6nTn1T"),
);

pub const FORCE: Param = query(
    "force",
    "boolean",
    "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.",
    Some("force-tOGGb0Yi"),
);

/// The parameters of list, watch and deletecollection, in the order published.
pub const LIST: [&Param; 11] = [
    &ALLOW_WATCH_BOOKMARKS,
    &CONTINUE,
    &FIELD_SELECTOR,
    &LABEL_SELECTOR,
    &LIMIT,
    &RESOURCE_VERSION,
    &RESOURCE_VERSION_MATCH,
    &SEND_INITIAL_EVENTS,
    &SHARD_SELECTOR,
    &TIMEOUT_SECONDS,
    &WATCH,
];
