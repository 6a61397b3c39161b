//! A namespace lookup that avoids string comparisons in the common case. Matching 10,000
//! candidates against budgets was dominated by comparing namespace strings; comparing a
//! fixed-size fingerprint first (length, first and last 8 bytes) leaves one string comparison
//! per candidate whose namespace actually has budgets, and a length filter skips reading the
//! name at all (a likely cache miss) when no indexed namespace has that length.

/// Namespace → the values listed under it, built once per decision.
#[derive(Debug)]
pub(super) struct NamespaceIndex<'a, T> {
    /// Sorted by fingerprint then name; one entry per namespace.
    entries: Vec<(Fingerprint, &'a str, Vec<T>)>,
    /// Bit `n` set: some namespace is `n` bytes long (bit 63: 63 bytes or more).
    lengths: u64,
}

fn length_bit(len: usize) -> u64 {
    1 << len.min(63)
}

type Fingerprint = (usize, u64, u64);

fn fingerprint(name: &str) -> Fingerprint {
    let bytes = name.as_bytes();
    let (head, tail) = match (bytes.first_chunk::<8>(), bytes.last_chunk::<8>()) {
        (Some(head), Some(tail)) => (u64::from_le_bytes(*head), u64::from_le_bytes(*tail)),
        // Shorter than 8 bytes: the whole name fits in one word (a byte loop, no memcpy call).
        _ => (
            bytes
                .iter()
                .fold(0_u64, |word, byte| word << 8 | u64::from(*byte)),
            0,
        ),
    };
    (bytes.len(), head, tail)
}

impl<'a, T> NamespaceIndex<'a, T> {
    /// Groups values by namespace, keeping their order within a namespace.
    pub(super) fn new(values: impl IntoIterator<Item = (&'a str, T)>) -> Self {
        let mut flat: Vec<(Fingerprint, &'a str, T)> = values
            .into_iter()
            .map(|(name, value)| (fingerprint(name), name, value))
            .collect();
        // Stable, so values keep their order within a namespace.
        flat.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
        let mut entries: Vec<(Fingerprint, &'a str, Vec<T>)> = Vec::new();
        for (print, name, value) in flat {
            match entries.last_mut() {
                Some((p, n, group)) if *p == print && *n == name => group.push(value),
                _ => entries.push((print, name, vec![value])),
            }
        }
        let lengths = entries
            .iter()
            .fold(0, |bits, (print, _, _)| bits | length_bit(print.0));
        Self { entries, lengths }
    }

    pub(super) fn get(&self, name: &str) -> Option<&[T]> {
        if self.lengths & length_bit(name.len()) == 0 {
            return None;
        }
        let print = fingerprint(name);
        let start = self.entries.partition_point(|(p, _, _)| *p < print);
        self.entries
            .get(start..)?
            .iter()
            .take_while(|(p, _, _)| *p == print)
            .find(|(_, n, _)| *n == name)
            .map(|(_, _, values)| values.as_slice())
    }
}
