//! Request bodies serialised as the recorder sent them: Python's `json.dumps` defaults
//! (`", "` and `": "` separators, non-ASCII escaped). The server quotes raw request bytes in
//! some messages ("Object 'Kind' is missing in '…'"), so the spacing shows in its answers.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::Formatter;

struct PythonFormatter;

impl Formatter for PythonFormatter {
    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.begin_array_value(writer, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }

    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        for c in fragment.chars() {
            if c.is_ascii() {
                writer.write_all(&[c as u8])?;
            } else {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    write!(writer, "\\u{unit:04x}")?;
                }
            }
        }
        Ok(())
    }
}

/// The value as `json.dumps(value)` writes it (members in the value's order).
pub fn to_vec(value: &impl Serialize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, PythonFormatter);
    // Serialising a JSON value into memory cannot fail.
    let _ = value.serialize(&mut serializer);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn separators_and_escapes_as_python_writes_them() {
        let value = json!({"a": [1, 2, {"b": "é😀"}], "c": null});
        assert_eq!(
            String::from_utf8(to_vec(&value)).unwrap(),
            r#"{"a": [1, 2, {"b": "\u00e9\ud83d\ude00"}], "c": null}"#
        );
    }
}
