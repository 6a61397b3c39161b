//! The label selector grammar of apimachinery's `labels.Parse`: a lexer of identifiers and
//! operator symbols and a recursive-descent parser, so that malformed selectors fail with the
//! messages kube-apiserver gives (`found 'x', expected: ...`).

use thiserror::Error;

/// A label selector that does not parse; the message is kube-apiserver's.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0}")]
pub struct ParseError(pub String);

/// One parsed requirement: key, operator and values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
    GreaterThan(String, i64),
    LessThan(String, i64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Error,
    End,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_special(c: char) -> bool {
    "=!(),><".contains(c)
}

/// Splits the selector into tokens, as the Go lexer does (the last one is `End` or `Error`).
fn lex(input: &str) -> Vec<(Token, String)> {
    let chars: Vec<char> = input.chars().collect();
    let mut pos = 0;
    let mut out = Vec::new();
    loop {
        while pos < chars.len() && chars[pos].is_whitespace() {
            pos += 1;
        }
        let Some(&c) = chars.get(pos) else {
            out.push((Token::End, String::new()));
            return out;
        };
        if is_special(c) {
            // The longest run of symbols that still forms a known operator.
            let mut buffer = String::new();
            let mut last: Option<(Token, String)> = None;
            while let Some(&c) = chars.get(pos) {
                if !is_special(c) {
                    break;
                }
                buffer.push(c);
                if let Some(t) = keyword(&buffer) {
                    last = Some((t, buffer.clone()));
                } else if last.is_some() {
                    break;
                }
                pos += 1;
            }
            match last {
                Some(item) => out.push(item),
                None => {
                    out.push((
                        Token::Error,
                        format!("error expected: keyword found '{buffer}'"),
                    ));
                    return out;
                }
            }
        } else {
            let start = pos;
            while pos < chars.len() && !chars[pos].is_whitespace() && !is_special(chars[pos]) {
                pos += 1;
            }
            let word: String = chars[start..pos].iter().collect();
            let token = keyword(&word).unwrap_or(Token::Identifier);
            out.push((token, word));
        }
    }
}

/// Whether `in`/`notin` count as plain identifiers (everywhere but in operator position).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    tokens: Vec<(Token, String)>,
    pos: usize,
}

impl Parser {
    fn lookahead(&self, ctx: Context) -> (Token, String) {
        let (mut t, lit) = self
            .tokens
            .get(self.pos)
            .cloned()
            .unwrap_or((Token::End, String::new()));
        if ctx == Context::Values && matches!(t, Token::In | Token::NotIn) {
            t = Token::Identifier;
        }
        (t, lit)
    }

    fn consume(&mut self, ctx: Context) -> (Token, String) {
        let item = self.lookahead(ctx);
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, ParseError> {
        let mut reqs = Vec::new();
        loop {
            let (t, lit) = self.lookahead(Context::Values);
            match t {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self
                        .requirement()
                        .map_err(|e| ParseError(format!("unable to parse requirement: {}", e.0)))?;
                    reqs.push(r);
                    let (t, lit) = self.consume(Context::Values);
                    match t {
                        Token::End => return Ok(reqs),
                        Token::Comma => {
                            let (t2, lit2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(ParseError(format!(
                                    "found '{lit2}', expected: identifier after ','"
                                )));
                            }
                        }
                        _ => {
                            return Err(ParseError(format!(
                                "found '{lit}', expected: ',' or 'end of string'"
                            )));
                        }
                    }
                }
                Token::End => return Ok(reqs),
                _ => {
                    return Err(ParseError(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    )));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, ParseError> {
        let (mut t, mut lit) = self.consume(Context::Values);
        let negated = t == Token::DoesNotExist;
        if negated {
            (t, lit) = self.consume(Context::Values);
        }
        if t != Token::Identifier {
            return Err(ParseError(format!("found '{lit}', expected: identifier")));
        }
        let key = lit;
        validate_key(&key)?;
        let (next, _) = self.lookahead(Context::Values);
        if negated {
            return Ok(Requirement::DoesNotExist(key));
        }
        if matches!(next, Token::End | Token::Comma) {
            return Ok(Requirement::Exists(key));
        }
        let (op, lit) = self.consume(Context::KeyAndOperator);
        let req = match op {
            Token::In => Requirement::In(key, self.values()?),
            Token::NotIn => Requirement::NotIn(key, self.values()?),
            Token::Equals | Token::DoubleEquals => {
                let v = self.exact_value()?;
                validate_value(&key, &v, 0)?;
                Requirement::Equals(key, v)
            }
            Token::NotEquals => {
                let v = self.exact_value()?;
                validate_value(&key, &v, 0)?;
                Requirement::NotEquals(key, v)
            }
            Token::GreaterThan | Token::LessThan => {
                let v = self.exact_value()?;
                let n = v.parse::<i64>().map_err(|_| {
                    ParseError(format!(
                        "values[0]: Invalid value: {v:?}: for 'Gt', 'Lt' operators, the value must be an integer"
                    ))
                })?;
                if op == Token::GreaterThan {
                    Requirement::GreaterThan(key, n)
                } else {
                    Requirement::LessThan(key, n)
                }
            }
            _ => {
                return Err(ParseError(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                )));
            }
        };
        if let Requirement::In(key, vs) | Requirement::NotIn(key, vs) = &req {
            for (i, v) in vs.iter().enumerate() {
                validate_value(key, v, i)?;
            }
        }
        Ok(req)
    }

    /// `( v1, v2 )` — sorted and de-duplicated, as Go's string set lists them.
    fn values(&mut self) -> Result<Vec<String>, ParseError> {
        let (t, lit) = self.consume(Context::Values);
        if t != Token::OpenPar {
            return Err(ParseError(format!("found '{lit}' expected: '('")));
        }
        let (t, lit) = self.lookahead(Context::Values);
        let mut set = match t {
            Token::Identifier | Token::Comma => {
                let set = self.identifiers()?;
                let (t, _) = self.consume(Context::Values);
                if t != Token::ClosedPar {
                    return Err(ParseError(format!("found '{lit}', expected: ')'")));
                }
                set
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                vec![String::new()]
            }
            _ => {
                return Err(ParseError(format!(
                    "found '{lit}', expected: ',', ')' or identifier"
                )));
            }
        };
        set.sort();
        set.dedup();
        Ok(set)
    }

    fn identifiers(&mut self) -> Result<Vec<String>, ParseError> {
        let mut set = Vec::new();
        loop {
            let (t, lit) = self.consume(Context::Values);
            match t {
                Token::Identifier => {
                    set.push(lit);
                    let (t2, lit2) = self.lookahead(Context::Values);
                    match t2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set),
                        _ => {
                            return Err(ParseError(format!(
                                "found '{lit2}', expected: ',' or ')'"
                            )));
                        }
                    }
                }
                Token::Comma => {
                    // Empty values: `(,a`, `a,)`, `a,,b`.
                    if set.is_empty() {
                        set.push(String::new());
                    }
                    let (t2, _) = self.lookahead(Context::Values);
                    if t2 == Token::ClosedPar {
                        set.push(String::new());
                        return Ok(set);
                    }
                    if t2 == Token::Comma {
                        self.consume(Context::Values);
                        set.push(String::new());
                    }
                }
                _ => {
                    return Err(ParseError(format!(
                        "found '{lit}', expected: ',', or identifier"
                    )));
                }
            }
        }
    }

    fn exact_value(&mut self) -> Result<String, ParseError> {
        let (t, _) = self.lookahead(Context::Values);
        if matches!(t, Token::End | Token::Comma) {
            return Ok(String::new());
        }
        let (t, lit) = self.consume(Context::Values);
        if t == Token::Identifier {
            Ok(lit)
        } else {
            Err(ParseError(format!("found '{lit}', expected: identifier")))
        }
    }
}

const NAME_FMT: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const SUBDOMAIN_FMT: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const VALUE_FMT: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

fn is_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(c))
}

fn is_dns_subdomain(s: &str) -> bool {
    s.split('.').all(|l| {
        let b = l.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    })
}

/// apimachinery's `IsQualifiedName`: `[prefix/]name`.
fn qualified_name_errors(key: &str) -> Vec<String> {
    let parts: Vec<&str> = key.split('/').collect();
    let (prefix, name) = match parts.as_slice() {
        [name] => (None, *name),
        [prefix, name] => (Some(*prefix), *name),
        _ => {
            return vec![format!(
                "a qualified name {NAME_FMT} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )];
        }
    };
    let mut errs = Vec::new();
    if let Some(p) = prefix {
        if p.is_empty() {
            errs.push("prefix part must be non-empty".to_string());
        } else {
            if p.len() > 253 {
                errs.push("prefix part must be no more than 253 characters".to_string());
            }
            if !is_dns_subdomain(p) {
                errs.push(format!("prefix part {SUBDOMAIN_FMT}"));
            }
        }
    }
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else {
        if name.len() > 63 {
            errs.push("name part must be no more than 63 characters".to_string());
        }
        if !is_name_part(name) {
            errs.push(format!("name part {NAME_FMT}"));
        }
    }
    errs
}

/// A label key; the parser has no field path, so Go prints `<nil>` for it.
fn validate_key(key: &str) -> Result<(), ParseError> {
    let errs = qualified_name_errors(key);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(ParseError(format!(
            "<nil>: Invalid value: {key:?}: {}",
            errs.join("; ")
        )))
    }
}

/// A label value (`values[i][key]` in the message).
fn validate_value(key: &str, v: &str, index: usize) -> Result<(), ParseError> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !v.is_empty() && !is_name_part(v) {
        errs.push(VALUE_FMT.to_string());
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(ParseError(format!(
            "values[{index}][{key}]: Invalid value: {v:?}: {}",
            errs.join("; ")
        )))
    }
}

/// Parses a selector string into requirements.
pub fn parse(selector: &str) -> Result<Vec<Requirement>, ParseError> {
    Parser {
        tokens: lex(selector),
        pos: 0,
    }
    .parse()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(s: &str) -> String {
        parse(s).unwrap_err().0
    }

    #[test]
    fn parses_every_operator() {
        let r = parse("a=1,b==2,c!=3,d in (y, x),e notin (z),f,!g,h>4,i<5").unwrap();
        assert_eq!(
            r,
            vec![
                Requirement::Equals("a".into(), "1".into()),
                Requirement::Equals("b".into(), "2".into()),
                Requirement::NotEquals("c".into(), "3".into()),
                Requirement::In("d".into(), vec!["x".into(), "y".into()]),
                Requirement::NotIn("e".into(), vec!["z".into()]),
                Requirement::Exists("f".into()),
                Requirement::DoesNotExist("g".into()),
                Requirement::GreaterThan("h".into(), 4),
                Requirement::LessThan("i".into(), 5),
            ]
        );
        assert!(parse("").unwrap().is_empty());
        assert_eq!(
            parse("example.com/app=web").unwrap(),
            vec![Requirement::Equals("example.com/app".into(), "web".into())]
        );
    }

    #[test]
    fn errors_read_as_kube_apiserver_writes_them() {
        assert_eq!(
            err("tier in gold"),
            "unable to parse requirement: found 'gold' expected: '('"
        );
        assert_eq!(
            err("tier=gold=x"),
            "found '=', expected: ',' or 'end of string'"
        );
        assert_eq!(
            err("=gold"),
            "found '=', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(err("a,"), "found '', expected: identifier after ','");
        assert!(err("a=b c").starts_with("found 'c'"));
        assert!(err("a=(b").contains("expected: identifier"));
        assert!(err("Bad_/x=1").starts_with(
            "unable to parse requirement: <nil>: Invalid value: \"Bad_/x\": prefix part a lowercase RFC 1123"
        ));
        assert!(err("a=-x").starts_with(
            "unable to parse requirement: values[0][a]: Invalid value: \"-x\": a valid label"
        ));
    }
}
