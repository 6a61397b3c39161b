//! The case files of the corpus, as its README describes them.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

/// Errors reading the corpus.
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot parse {path}: {source}")]
    Parse {
        path: String,
        #[source]
        source: serde_json::Error,
    },
}

/// `index.json`: every case of the corpus.
#[derive(Debug, Clone, Deserialize)]
pub struct Index {
    pub kubernetes: String,
    pub cases: Vec<IndexEntry>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct IndexEntry {
    pub name: String,
    pub file: String,
    #[serde(default)]
    pub description: String,
}

impl IndexEntry {
    /// The group of a case: the part of its name before the `/`.
    pub fn group(&self) -> &str {
        self.name.split('/').next().unwrap_or(&self.name)
    }
}

/// One self-contained case.
#[derive(Debug, Clone, Deserialize)]
pub struct Case {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The namespace placeholders the case uses, e.g. `{{ns}}`, `{{ns2}}`.
    #[serde(default)]
    pub namespaces: Vec<String>,
    #[serde(default)]
    pub exclusive: bool,
    #[serde(default)]
    pub requires: Vec<String>,
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Setup,
    Test,
    Cleanup,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Step {
    pub role: Role,
    #[serde(default)]
    pub note: Option<String>,
    #[serde(default)]
    pub request: Option<Request>,
    #[serde(default)]
    pub action: Option<Action>,
    #[serde(default)]
    pub poll: Option<Poll>,
    #[serde(default)]
    pub watch: Option<WatchSpec>,
    #[serde(default)]
    pub response: Option<Response>,
    #[serde(default)]
    pub compare: Compare,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Request {
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub body: Option<Value>,
    #[serde(default)]
    pub body_text: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Action {
    pub name: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Poll {
    pub until: Vec<Value>,
    pub timeout_seconds: f64,
    pub interval_seconds: f64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct WatchSpec {
    #[serde(default)]
    pub concurrent_steps: usize,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Response {
    pub status: u16,
    #[serde(default)]
    pub headers: ResponseHeaders,
    #[serde(default)]
    pub body: Option<Value>,
    #[serde(default)]
    pub body_text: Option<String>,
    #[serde(default)]
    pub body_base64: Option<String>,
    #[serde(default)]
    pub body_omitted: bool,
    #[serde(default)]
    pub events: Option<Vec<Value>>,
    #[serde(default)]
    pub projection: Option<Vec<Value>>,
}

impl Response {
    /// Whether the recording kept a body of any form (and so the body takes part in
    /// normalisation, whatever the step's role).
    pub fn has_recorded_body(&self) -> bool {
        !self.body_omitted
            && (self.body.is_some()
                || self.body_text.is_some()
                || self.body_base64.is_some()
                || self.events.is_some())
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ResponseHeaders {
    #[serde(rename = "Content-Type", default)]
    pub content_type: Option<String>,
    #[serde(rename = "Warning", default)]
    pub warning: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Compare {
    /// `exact` or `none`.
    #[serde(default)]
    pub body: Option<String>,
    /// `exact` for watches.
    #[serde(default)]
    pub events: Option<String>,
    #[serde(default)]
    pub optional_bookmarks: bool,
    #[serde(default)]
    pub headers: Vec<String>,
    #[serde(default)]
    pub ignore: Vec<String>,
    #[serde(default)]
    pub prefix: BTreeMap<String, String>,
    #[serde(default)]
    pub unordered: Vec<String>,
}

impl Compare {
    pub fn body_exact(&self) -> bool {
        self.body.as_deref() == Some("exact")
    }
}

fn read(path: &Path) -> Result<String, CaseError> {
    std::fs::read_to_string(path).map_err(|source| CaseError::Read {
        path: path.display().to_string(),
        source,
    })
}

fn parse<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T, CaseError> {
    serde_json::from_str(text).map_err(|source| CaseError::Parse {
        path: path.display().to_string(),
        source,
    })
}

/// Reads `index.json` of a corpus directory.
pub fn load_index(dir: &Path) -> Result<Index, CaseError> {
    let path = dir.join("index.json");
    parse(&path, &read(&path)?)
}

/// Reads one case of a corpus directory.
pub fn load_case(dir: &Path, entry: &IndexEntry) -> Result<Case, CaseError> {
    let path = dir.join(&entry.file);
    parse(&path, &read(&path)?)
}
