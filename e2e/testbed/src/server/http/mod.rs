//! Serving HTTP: routing (`route`) and handlers, decoding and content negotiation (JSON,
//! YAML, protobuf), discovery, OpenAPI, tables (`table`, `table_cells`, `json_path`), list
//! and watch, authentication and RBAC, reviews, TLS, kubeconfigs, the request-level models
//! (faults, cost, request counts), and `ClusterState`, which holds one cluster.

pub(crate) mod auth;
pub(crate) mod cluster;
pub(crate) mod continue_token;
pub(crate) mod cost;
pub(crate) mod decode;
pub(crate) mod discovery;
pub(crate) mod faults;
pub(crate) mod handlers;
pub(crate) mod json_path;
pub(crate) mod kubeconfig;
pub(crate) mod list;
pub(crate) mod list_options;
pub(crate) mod negotiate;
pub(crate) mod openapi;
pub(crate) mod openapi_crd;
pub(crate) mod openapi_params;
mod openapi_v2_proto;
pub(crate) mod protobuf;
pub(crate) mod rbac;
pub(crate) mod request_counts;
pub(crate) mod reviews;
pub(crate) mod route;
pub(crate) mod table;
pub(crate) mod table_cells;
pub(crate) mod tls;
pub(crate) mod watch;
