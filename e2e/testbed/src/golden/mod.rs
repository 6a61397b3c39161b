//! Replaying the recorded kube-apiserver corpus (`shared/apiserver-golden/`) against a
//! testbed cluster: the check that the testbed answers as a real API server does.
//!
//! The procedure is the corpus README's: substitute placeholders in each request, send it,
//! keep the raw answer for later placeholders, project and normalise the answer (run-to-run
//! values become numbered placeholders), and compare with the recording. Everything but the
//! HTTP driver (`replay`) is pure and unit-tested.

pub(crate) mod case;
pub(crate) mod compare;
pub(crate) mod normalise;
pub(crate) mod predicate;
pub(crate) mod projection;
pub(crate) mod python_json;
pub(crate) mod replay;
pub(crate) mod substitute;

pub use case::{Case, Index, IndexEntry, load_case, load_index};
pub use replay::{CaseOutcome, Replayer};
