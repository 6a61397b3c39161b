//! The HTTP driver: replays one case against a fresh testbed cluster and compares every
//! step (the imperative shell around `substitute`, `predicate`, `projection`, `normalise`
//! and `compare`).

use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request as HttpRequest;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use super::case::{Case, Role, Step};
use super::compare::{Actual, differences};
use super::normalise::{BodyKind, Normaliser};
use super::predicate::all_hold;
use super::substitute::{Context, RawAnswer};
use super::{projection, python_json};
use crate::server::{ClusterOptions, TestCluster};

type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// How a case went.
#[derive(Debug, Clone)]
pub struct CaseOutcome {
    pub name: String,
    /// `step N (role): what differs`; empty when every step matched.
    pub differences: Vec<String>,
    /// How long the replay took (polls and watch timeouts included).
    pub elapsed: Duration,
}

impl CaseOutcome {
    pub fn matched(&self) -> bool {
        self.differences.is_empty()
    }
}

/// What one request got back, before normalisation.
#[derive(Debug, Clone, Default)]
struct Answer {
    status: u16,
    content_type: Option<String>,
    warnings: Vec<String>,
    body: Bytes,
    /// Watch events, when the step watched and the server answered 200.
    events: Option<Vec<Value>>,
    /// The request body's `metadata.generateName`, if any.
    generate_name: Option<String>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// Replays cases, each on a cluster of its own.
#[derive(Debug, Clone)]
pub struct Replayer {
    /// The testbed answers at once; a poll that has not succeeded by then never will.
    pub poll_limit: Duration,
    /// Upper bound for one request (watches end by their own `timeoutSeconds`).
    pub request_limit: Duration,
}

impl Default for Replayer {
    fn default() -> Self {
        Self {
            poll_limit: Duration::from_secs(15),
            request_limit: Duration::from_secs(30),
        }
    }
}

struct Run<'a> {
    replayer: &'a Replayer,
    case: &'a Case,
    cluster: TestCluster,
    client: HttpClient,
    context: Context,
    answers: Vec<Option<Answer>>,
    errors: Vec<String>,
}

impl Replayer {
    /// Replays one case on a fresh testbed cluster.
    pub async fn run(&self, case: &Case) -> CaseOutcome {
        let started = Instant::now();
        let cluster = match TestCluster::start(ClusterOptions {
            name: "golden".into(),
            ..ClusterOptions::default()
        })
        .await
        {
            Ok(c) => c,
            Err(e) => {
                return CaseOutcome {
                    name: case.name.clone(),
                    differences: vec![format!("cannot start a testbed cluster: {e}")],
                    elapsed: started.elapsed(),
                };
            }
        };
        let suffix = uuid::Uuid::new_v4().simple().to_string();
        let mut names = std::collections::BTreeMap::new();
        for (i, placeholder) in case.namespaces.iter().enumerate() {
            let key = placeholder.trim_start_matches("{{").trim_end_matches("}}");
            let letter = (b'a' + i as u8) as char;
            names.insert(key.to_string(), format!("r{}{letter}", &suffix[..12]));
        }
        let client = Client::builder(TokioExecutor::new()).build_http();
        let mut run = Run {
            replayer: self,
            case,
            cluster,
            client,
            context: Context {
                names,
                steps: vec![None; case.steps.len()],
            },
            answers: vec![None; case.steps.len()],
            errors: Vec::new(),
        };
        run.execute_all().await;
        let differences = run.compare_all();
        run.cluster.shutdown().await;
        CaseOutcome {
            name: case.name.clone(),
            differences,
            elapsed: started.elapsed(),
        }
    }
}

impl Run<'_> {
    async fn execute_all(&mut self) {
        let mut i = 0;
        while i < self.case.steps.len() {
            i = self.execute(i).await;
        }
    }

    /// Runs step `i` (and, for a watch, the steps it covers); returns the next step.
    async fn execute(&mut self, i: usize) -> usize {
        let step = &self.case.steps[i];
        if let Some(action) = &step.action {
            if action.name == "compact-storage" {
                self.cluster.compact();
            } else {
                self.errors
                    .push(format!("step {i}: unknown action {}", action.name));
            }
            return i + 1;
        }
        let Some(request) = &step.request else {
            return i + 1;
        };
        let concurrent = step.watch.as_ref().map(|w| w.concurrent_steps);
        let built = self.build(step);
        let generate_name = request
            .body
            .as_ref()
            .map(|b| self.context.value(b))
            .and_then(|b| {
                b.pointer("/metadata/generateName")
                    .and_then(Value::as_str)
                    .map(String::from)
            });
        let mut next = i + 1;
        let answer = match concurrent {
            Some(k) => {
                let response = self.send(built).await;
                match response {
                    Ok(response) if response.status() == 200 => {
                        let (content_type, warnings) = headers_of(&response);
                        let reader = tokio::spawn(read_events(response.into_body()));
                        let mut j = i + 1;
                        while j <= i + k && j < self.case.steps.len() {
                            j = Box::pin(self.execute(j)).await;
                        }
                        next = j;
                        let events = tokio::time::timeout(self.replayer.request_limit, reader)
                            .await
                            .ok()
                            .and_then(Result::ok)
                            .unwrap_or_default();
                        Ok(Answer {
                            status: 200,
                            content_type,
                            warnings,
                            events: Some(events),
                            ..Answer::default()
                        })
                    }
                    Ok(response) => read_answer(response).await,
                    Err(e) => Err(e),
                }
            }
            None => self.send_polled(step).await,
        };
        match answer {
            Ok(mut answer) => {
                answer.generate_name = generate_name;
                self.context.steps[i] = Some(RawAnswer {
                    status: answer.status,
                    body: answer.json(),
                });
                self.answers[i] = Some(answer);
            }
            Err(e) => self.errors.push(format!("step {i}: {e}")),
        }
        next
    }

    fn build(&self, step: &Step) -> HttpRequest<Full<Bytes>> {
        let request = step.request.as_ref().expect("only request steps are built");
        let path = self.context.text(&request.path);
        let mut builder = HttpRequest::builder()
            .method(request.method.as_str())
            .uri(format!("{}{path}", self.cluster.url()))
            .header("User-Agent", "golden/1.0");
        let mut has_accept = false;
        for (name, value) in &request.headers {
            has_accept |= name.eq_ignore_ascii_case("accept");
            builder = builder.header(name.as_str(), self.context.text(value));
        }
        if !has_accept {
            builder = builder.header("Accept", "application/json");
        }
        let body = if let Some(body) = &request.body {
            Bytes::from(python_json::to_vec(&self.context.value(body)))
        } else if let Some(text) = &request.body_text {
            Bytes::from(self.context.text(text))
        } else {
            Bytes::new()
        };
        builder
            .body(Full::new(body))
            .unwrap_or_else(|_| HttpRequest::new(Full::new(Bytes::new())))
    }

    async fn send(
        &self,
        request: HttpRequest<Full<Bytes>>,
    ) -> Result<hyper::Response<hyper::body::Incoming>, String> {
        match tokio::time::timeout(self.replayer.request_limit, self.client.request(request)).await
        {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) => Err(format!("request failed: {e}")),
            Err(_) => Err("no answer in time".into()),
        }
    }

    async fn send_polled(&self, step: &Step) -> Result<Answer, String> {
        let started = Instant::now();
        loop {
            let response = self.send(self.build(step)).await?;
            let answer = tokio::time::timeout(self.replayer.request_limit, read_answer(response))
                .await
                .map_err(|_| "the body did not end in time".to_string())??;
            let Some(poll) = &step.poll else {
                return Ok(answer);
            };
            let until: Vec<Value> = poll.until.iter().map(|p| self.context.value(p)).collect();
            let limit = Duration::from_secs_f64(poll.timeout_seconds).min(self.replayer.poll_limit);
            if all_hold(&until, answer.status, &answer.json()) || started.elapsed() >= limit {
                return Ok(answer);
            }
            tokio::time::sleep(Duration::from_secs_f64(poll.interval_seconds.max(0.05))).await;
        }
    }

    /// Normalises every recorded answer in the README's order and compares.
    fn compare_all(&mut self) -> Vec<String> {
        let names: Vec<(String, String)> = self
            .context
            .names
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut normaliser = Normaliser::new(&names);
        let mut out = std::mem::take(&mut self.errors);
        for i in normalisation_order(self.case) {
            let step = &self.case.steps[i];
            let (Some(expected), Some(_)) = (&step.response, &step.request) else {
                continue;
            };
            let Some(answer) = &self.answers[i] else {
                continue;
            };
            if let Some(g) = &answer.generate_name {
                normaliser.add_generate_name(g);
            }
            let actual = self.normalised(&mut normaliser, step, answer);
            let compare = match step.role {
                Role::Test => step.compare.clone(),
                Role::Setup | Role::Cleanup => Default::default(),
            };
            for d in differences(expected, &compare, &actual) {
                let role = format!("{:?}", step.role).to_lowercase();
                let note = step
                    .note
                    .as_deref()
                    .map(|n| format!(" [{n}]"))
                    .unwrap_or_default();
                out.push(format!("step {i} ({role}){note}: {d}"));
            }
        }
        out
    }

    fn normalised(&self, normaliser: &mut Normaliser, step: &Step, answer: &Answer) -> Actual {
        let expected = step
            .response
            .as_ref()
            .expect("compared steps have a response");
        let mut actual = Actual {
            status: answer.status,
            content_type: answer.content_type.clone(),
            warnings: Vec::new(),
            ..Actual::default()
        };
        if !expected.has_recorded_body() {
            actual.warnings = answer.warnings.iter().map(|w| normaliser.text(w)).collect();
            return actual;
        }
        if let Some(events) = &answer.events {
            actual.events = Some(
                events
                    .iter()
                    .map(|event| {
                        let kind = if event.get("type").and_then(Value::as_str) == Some("BOOKMARK")
                        {
                            BodyKind::Bookmark
                        } else {
                            BodyKind::Plain
                        };
                        let mut event = event.clone();
                        if let Some(object) = event.get("object") {
                            let object = normaliser.body(object, kind);
                            event["object"] = object;
                        }
                        event
                    })
                    .collect(),
            );
        } else if expected.body_base64.is_some() {
            actual.body_base64 =
                Some(base64::engine::general_purpose::STANDARD.encode(&answer.body));
        } else if let Ok(body) = serde_json::from_slice::<Value>(&answer.body) {
            let body = match &expected.projection {
                Some(ops) => {
                    let ops: Vec<Value> = ops.iter().map(|o| self.context.value(o)).collect();
                    projection::apply(&body, &ops)
                }
                None => body,
            };
            actual.body = Some(normaliser.body(&body, BodyKind::Plain));
        } else {
            actual.body_text = Some(normaliser.text(&String::from_utf8_lossy(&answer.body)));
        }
        actual.warnings = answer.warnings.iter().map(|w| normaliser.text(w)).collect();
        actual
    }
}

/// Steps in normalisation order: a watch's concurrent steps come before its events.
fn normalisation_order(case: &Case) -> Vec<usize> {
    let mut order = Vec::new();
    let mut i = 0;
    while i < case.steps.len() {
        let k = case.steps[i]
            .watch
            .as_ref()
            .map(|w| w.concurrent_steps)
            .unwrap_or(0);
        let end = (i + k).min(case.steps.len() - 1);
        order.extend(i + 1..=end);
        order.push(i);
        i = end + 1;
    }
    order
}

fn headers_of<B>(response: &hyper::Response<B>) -> (Option<String>, Vec<String>) {
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(String::from)
        .collect();
    (content_type, warnings)
}

async fn read_answer(response: hyper::Response<hyper::body::Incoming>) -> Result<Answer, String> {
    let status = response.status().as_u16();
    let (content_type, warnings) = headers_of(&response);
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("cannot read the body: {e}"))?
        .to_bytes();
    Ok(Answer {
        status,
        content_type,
        warnings,
        body,
        ..Answer::default()
    })
}

/// Reads newline-delimited watch events until the server ends the stream.
async fn read_events(mut body: hyper::body::Incoming) -> Vec<Value> {
    let mut buffer = Vec::new();
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Some(data) = frame.data_ref() {
                    buffer.extend_from_slice(data);
                }
            }
            Err(_) => break,
        }
    }
    buffer
        .split(|b| *b == b'\n')
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
        .map(|line| serde_json::from_slice(line).unwrap_or(Value::Null))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_watchs_concurrent_steps_are_normalised_before_it() {
        let step = |watch: Option<usize>| {
            json!({"role": "test", "request": {"method": "GET", "path": "/"},
                "watch": watch.map(|k| json!({"concurrent_steps": k}))})
        };
        let case: Case = serde_json::from_value(json!({
            "name": "x/y", "steps": [step(None), step(Some(2)), step(None), step(None), step(None)]
        }))
        .unwrap();
        assert_eq!(normalisation_order(&case), vec![0, 2, 3, 1, 4]);
    }
}
