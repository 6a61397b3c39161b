//! The cluster's certificate authority: what its HTTPS endpoint's certificate is signed by,
//! and what token Secrets and kubeconfigs carry as `ca.crt`.

pub const CA_PEM: &str = include_str!("ca.pem");
