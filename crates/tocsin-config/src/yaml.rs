//! Reading a configuration file (YAML, or JSON, which YAML reads too) into a JSON value plus
//! the line of every node, keyed by its path as errors name it (`monitors[3].interval`).
//!
//! yaml-rust2 is the maintained successor of yaml-rust and gives a position (`Marker`) with
//! every parser event; serde_yaml is unmaintained and its forks hide positions behind the
//! deserializer. Building the value from the events ourselves is what keeps a line per node.

use std::collections::HashMap;

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// A parsed file: its value and the line (from 1) of each node, by path.
#[derive(Debug, Clone, Default)]
pub struct Located {
    pub value: Value,
    pub lines: HashMap<String, usize>,
}

impl Located {
    /// The line of `path`, or of its nearest ancestor that has one.
    pub fn line_of(&self, path: &str) -> Option<usize> {
        let mut p = path.to_string();
        loop {
            if let Some(l) = self.lines.get(&p) {
                return Some(*l);
            }
            let cut = p.rfind(['.', '['])?;
            p.truncate(cut);
        }
    }
}

/// A syntax error with its line.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError {
    pub line: usize,
    pub path: String,
    pub message: String,
}

/// Joins a path and a key as errors write them.
pub fn child_key(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Joins a path and an index.
pub fn child_index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

enum Frame {
    Map {
        map: Map<String, Value>,
        path: String,
        key: Option<String>,
        anchor: usize,
    },
    Seq {
        items: Vec<Value>,
        path: String,
        anchor: usize,
    },
}

struct Builder {
    stack: Vec<Frame>,
    root: Option<Value>,
    lines: HashMap<String, usize>,
    anchors: HashMap<usize, Value>,
    error: Option<SyntaxError>,
    documents: usize,
}

impl Builder {
    /// The path the next value takes, or `None` when the next scalar is a mapping key.
    fn next_path(&self) -> Option<String> {
        match self.stack.last() {
            None => Some(String::new()),
            Some(Frame::Map { key: None, .. }) => None,
            Some(Frame::Map {
                key: Some(k), path, ..
            }) => Some(child_key(path, k)),
            Some(Frame::Seq { items, path, .. }) => Some(child_index(path, items.len())),
        }
    }

    fn fail(&mut self, line: usize, path: String, message: String) {
        if self.error.is_none() {
            self.error = Some(SyntaxError {
                line,
                path,
                message,
            });
        }
    }

    fn put(&mut self, value: Value, anchor: usize) {
        if anchor > 0 {
            self.anchors.insert(anchor, value.clone());
        }
        match self.stack.last_mut() {
            None => self.root = Some(value),
            Some(Frame::Map { map, key, .. }) => {
                if let Some(k) = key.take() {
                    map.insert(k, value);
                }
            }
            Some(Frame::Seq { items, .. }) => items.push(value),
        }
    }

    fn key(&mut self, text: String, line: usize) {
        let Some(Frame::Map { map, path, key, .. }) = self.stack.last_mut() else {
            return;
        };
        let full = child_key(path, &text);
        if map.contains_key(&text) {
            let message = format!("duplicate key `{text}`");
            self.fail(line, full, message);
            return;
        }
        self.lines.insert(full, line);
        *key = Some(text);
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        let line = mark.line();
        match ev {
            Event::DocumentStart => {
                self.documents += 1;
                if self.documents > 1 {
                    self.fail(
                        line,
                        String::new(),
                        "only one YAML document per file".into(),
                    );
                }
            }
            Event::Scalar(text, style, anchor, tag) => match self.next_path() {
                None => self.key(text, line),
                Some(path) => {
                    self.lines.entry(path).or_insert(line);
                    let quoted = style != TScalarStyle::Plain
                        || tag.as_ref().is_some_and(|t| t.suffix == "str");
                    let v = if quoted {
                        Value::String(text)
                    } else {
                        plain(&text)
                    };
                    self.put(v, anchor);
                }
            },
            Event::Alias(id) => {
                let v = self.anchors.get(&id).cloned().unwrap_or(Value::Null);
                match self.next_path() {
                    None => match v {
                        Value::String(s) => self.key(s, line),
                        _ => self.fail(line, String::new(), "an alias as a key".into()),
                    },
                    Some(path) => {
                        self.lines.entry(path).or_insert(line);
                        self.put(v, 0);
                    }
                }
            }
            Event::MappingStart(anchor, _) | Event::SequenceStart(anchor, _) => {
                let is_map = matches!(ev, Event::MappingStart(..));
                let Some(path) = self.next_path() else {
                    self.fail(line, String::new(), "a mapping or list as a key".into());
                    // Keep the structure balanced so later events still make sense.
                    self.stack.push(Frame::Seq {
                        items: vec![],
                        path: String::from("?"),
                        anchor: 0,
                    });
                    return;
                };
                self.lines.entry(path.clone()).or_insert(line);
                self.stack.push(if is_map {
                    Frame::Map {
                        map: Map::new(),
                        path,
                        key: None,
                        anchor,
                    }
                } else {
                    Frame::Seq {
                        items: vec![],
                        path,
                        anchor,
                    }
                });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                let (value, anchor) = match self.stack.pop() {
                    Some(Frame::Map { map, anchor, .. }) => (Value::Object(map), anchor),
                    Some(Frame::Seq { items, anchor, .. }) => (Value::Array(items), anchor),
                    None => return,
                };
                self.put(value, anchor);
            }
            _ => {}
        }
    }
}

/// A plain scalar as YAML 1.2's core schema reads it.
fn plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(i) = text.parse::<i64>() {
            return Value::Number(i.into());
        }
    }
    if let Some(hex) = text.strip_prefix("0x") {
        if let Ok(i) = i64::from_str_radix(hex, 16) {
            return Value::Number(i.into());
        }
    }
    let looks_float = text
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
        && text.bytes().any(|b| b.is_ascii_digit());
    if looks_float {
        if let Some(n) = text.parse::<f64>().ok().and_then(Number::from_f64) {
            return Value::Number(n);
        }
    }
    Value::String(text.to_string())
}

/// Parses `text` (YAML or JSON).
pub fn parse(text: &str) -> Result<Located, SyntaxError> {
    let mut b = Builder {
        stack: vec![],
        root: None,
        lines: HashMap::new(),
        anchors: HashMap::new(),
        error: None,
        documents: 0,
    };
    let mut parser = Parser::new_from_str(text);
    if let Err(e) = parser.load(&mut b, true) {
        return Err(SyntaxError {
            line: e.marker().line(),
            path: String::new(),
            message: e.info().to_string(),
        });
    }
    if let Some(e) = b.error {
        return Err(e);
    }
    Ok(Located {
        value: b.root.unwrap_or(Value::Null),
        lines: b.lines,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn lines_follow_paths() {
        let doc = parse("version: 1\nmonitors:\n  - name: a\n    interval: 30\n  - name: \"b\"\n    port: 0x10\n").unwrap();
        assert_eq!(doc.value["monitors"][1]["name"], "b");
        assert_eq!(doc.value["monitors"][1]["port"], 16);
        assert_eq!(doc.lines["monitors[0].interval"], 4);
        assert_eq!(doc.line_of("monitors[1].port.x"), Some(6));
        assert_eq!(doc.line_of("monitors[1]"), Some(5));
    }

    #[test]
    fn json_reads_too_and_duplicates_fail() {
        let doc = parse("{\"version\": 1, \"monitors\": [{\"name\": \"x\", \"tags\": [\"a\"]}]}")
            .unwrap();
        assert_eq!(doc.value["monitors"][0]["tags"][0], "a");
        let e = parse("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!((e.line, e.path.as_str()), (3, "a"));
        let e = parse("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(e.line >= 1, "{e:?}");
    }

    #[test]
    fn scalars() {
        assert_eq!(plain("12"), Value::from(12));
        assert_eq!(plain("1.5"), Value::from(1.5));
        assert_eq!(plain("~"), Value::Null);
        assert_eq!(plain("2xx"), Value::from("2xx"));
        assert_eq!(plain("-"), Value::from("-"));
    }
}
