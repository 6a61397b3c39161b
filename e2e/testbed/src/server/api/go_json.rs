//! The syntax errors Go's `encoding/json` reports, word for word: kube-apiserver passes them
//! through in its 400 answers to malformed bodies (`json parse error: unexpected end of JSON
//! input`, `invalid character '}' looking for beginning of object key string`, ...).
//! A small recursive scanner with the states of Go's `scanner.go`.

/// The error Go's `json.Unmarshal` reports for a syntactically invalid document, or `None`
/// when the document is valid JSON.
pub fn syntax_error(data: &[u8]) -> Option<String> {
    let mut s = Scanner { data, pos: 0 };
    let result = s.skip_space().and_then(|_| s.value()).and_then(|_| {
        s.skip_space()?;
        match s.peek() {
            None => Ok(()),
            Some(c) => Err(invalid(c, "after top-level value")),
        }
    });
    result.err()
}

/// Go's name for the JSON type of a value in `cannot unmarshal X into ...` messages.
pub fn type_name(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

const END: &str = "unexpected end of JSON input";

struct Scanner<'a> {
    data: &'a [u8],
    pos: usize,
}

type Scan = Result<(), String>;

fn invalid(c: u8, context: &str) -> String {
    format!("invalid character {} {context}", quote_char(c))
}

/// Go's `quoteChar`: the character in single quotes, escaped as `strconv.Quote` would.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".to_string(),
        b'"' => "'\"'".to_string(),
        0x07 => r"'\a'".to_string(),
        0x08 => r"'\b'".to_string(),
        0x0c => r"'\f'".to_string(),
        b'\n' => r"'\n'".to_string(),
        b'\r' => r"'\r'".to_string(),
        b'\t' => r"'\t'".to_string(),
        0x0b => r"'\v'".to_string(),
        b'\\' => r"'\\'".to_string(),
        c if c < 0x20 || c == 0x7f => format!(r"'\x{c:02x}'"),
        c if c < 0x80 => format!("'{}'", c as char),
        // A byte of a multi-byte character: Go converts the byte itself to a rune.
        c if c < 0xa0 => format!(r"'\u{c:04x}'"),
        c => format!("'{}'", char::from(c)),
    }
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.data.get(self.pos).copied()
    }

    fn next(&mut self) -> Result<u8, String> {
        let c = self.peek().ok_or_else(|| END.to_string())?;
        self.pos += 1;
        Ok(c)
    }

    fn skip_space(&mut self) -> Scan {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.pos += 1;
        }
        Ok(())
    }

    fn value(&mut self) -> Scan {
        match self.next()? {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => self.string(),
            b'-' => self.number(),
            b'0'..=b'9' => {
                // The digit is the number's first: read it again there.
                self.pos -= 1;
                self.number()
            }
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            c => Err(invalid(c, "looking for beginning of value")),
        }
    }

    fn object(&mut self) -> Scan {
        self.skip_space()?;
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            match self.next()? {
                b'"' => self.string()?,
                c => return Err(invalid(c, "looking for beginning of object key string")),
            }
            self.skip_space()?;
            match self.next()? {
                b':' => {}
                c => return Err(invalid(c, "after object key")),
            }
            self.skip_space()?;
            self.value()?;
            self.skip_space()?;
            match self.next()? {
                b',' => self.skip_space()?,
                b'}' => return Ok(()),
                c => return Err(invalid(c, "after object key:value pair")),
            }
        }
    }

    fn array(&mut self) -> Scan {
        self.skip_space()?;
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.value()?;
            self.skip_space()?;
            match self.next()? {
                b',' => self.skip_space()?,
                b']' => return Ok(()),
                c => return Err(invalid(c, "after array element")),
            }
        }
    }

    fn string(&mut self) -> Scan {
        loop {
            match self.next()? {
                b'"' => return Ok(()),
                b'\\' => match self.next()? {
                    b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => {}
                    b'u' => {
                        for _ in 0..4 {
                            let c = self.next()?;
                            if !c.is_ascii_hexdigit() {
                                return Err(invalid(c, r"in \u hexadecimal character escape"));
                            }
                        }
                    }
                    c => return Err(invalid(c, "in string escape code")),
                },
                c if c < 0x20 => return Err(invalid(c, "in string literal")),
                _ => {}
            }
        }
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
    }

    /// A number after its optional minus sign.
    fn number(&mut self) -> Scan {
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            c => return Err(invalid(c, "in numeric literal")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            match self.next()? {
                b'0'..=b'9' => self.digits(),
                c => return Err(invalid(c, "after decimal point in numeric literal")),
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            let mut c = self.next()?;
            if c == b'+' || c == b'-' {
                c = self.next()?;
            }
            if !c.is_ascii_digit() {
                return Err(invalid(c, "in exponent of numeric literal"));
            }
            self.digits();
        }
        Ok(())
    }

    fn literal(&mut self, word: &str) -> Scan {
        for expected in word.bytes().skip(1) {
            let c = self.next()?;
            if c != expected {
                return Err(invalid(
                    c,
                    &format!("in literal {word} (expecting {})", quote_char(expected)),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_documents_have_no_error() {
        for doc in [
            r#"{}"#,
            r#" {"a": [1, -2.5e+3, true, false, null, "x\n\u00e9"]} "#,
            "[]",
            "0",
        ] {
            assert_eq!(syntax_error(doc.as_bytes()), None, "{doc}");
        }
    }

    #[test]
    fn errors_read_as_go_reports_them() {
        let cases = [
            ("", "unexpected end of JSON input"),
            (r#"{"apiVersion": "x", "#, "unexpected end of JSON input"),
            (
                "xyz",
                "invalid character 'x' looking for beginning of value",
            ),
            (
                "{,}",
                "invalid character ',' looking for beginning of object key string",
            ),
            (r#"{"a" 1}"#, "invalid character '1' after object key"),
            (
                r#"{"a": 1 "b"}"#,
                "invalid character '\"' after object key:value pair",
            ),
            ("[1 2]", "invalid character '2' after array element"),
            ("{} x", "invalid character 'x' after top-level value"),
            ("tru", "unexpected end of JSON input"),
            (
                "trux",
                "invalid character 'x' in literal true (expecting 'e')",
            ),
            ("-x", "invalid character 'x' in numeric literal"),
            (
                "1.x",
                "invalid character 'x' after decimal point in numeric literal",
            ),
            ("\"a\tb\"", r"invalid character '\t' in string literal"),
        ];
        for (doc, want) in cases {
            assert_eq!(
                syntax_error(doc.as_bytes()).as_deref(),
                Some(want),
                "{doc:?}"
            );
        }
    }
}
