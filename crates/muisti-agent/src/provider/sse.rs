//! Server-sent events: `event:` and `data:` lines, an empty line ends an event.

use std::io::BufRead;

/// One event.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct SseEvent {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines joined by newlines.
    pub data: String,
}

/// Calls `f` for each event read from `reader` until the stream ends or `f` returns
/// `Ok(false)`. Returns the read error, if any, as text.
pub(crate) fn for_each_event<E>(
    mut reader: impl BufRead,
    mut f: impl FnMut(SseEvent) -> Result<bool, E>,
    read_error: impl Fn(std::io::Error) -> E,
) -> Result<(), E> {
    let mut current = SseEvent::default();
    let mut has_data = false;
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader.read_line(&mut line).map_err(&read_error)?;
        let l = line.trim_end_matches(['\n', '\r']);
        if n == 0 || l.is_empty() {
            if has_data || current.event.is_some() {
                let event = std::mem::take(&mut current);
                has_data = false;
                if !f(event)? {
                    return Ok(());
                }
            }
            if n == 0 {
                return Ok(());
            }
            continue;
        }
        if l.starts_with(':') {
            continue;
        }
        let (field, value) = match l.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (l, ""),
        };
        match field {
            "event" => current.event = Some(value.to_owned()),
            "data" => {
                if has_data {
                    current.data.push('\n');
                }
                current.data.push_str(value);
                has_data = true;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(text: &str) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for_each_event(
            text.as_bytes(),
            |e| {
                out.push(e);
                Ok::<_, String>(true)
            },
            |e| e.to_string(),
        )
        .expect("parses");
        out
    }

    #[test]
    fn events_fields_comments_and_crlf() {
        let got = events(": ping\r\nevent: a\r\ndata: one\r\ndata:two\r\n\r\ndata: {\"x\":1}\n\n");
        assert_eq!(
            got,
            vec![
                SseEvent {
                    event: Some("a".into()),
                    data: "one\ntwo".into()
                },
                SseEvent {
                    event: None,
                    data: "{\"x\":1}".into()
                },
            ]
        );
    }

    #[test]
    fn last_event_without_blank_line_is_delivered() {
        let got = events("data: tail");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].data, "tail");
    }

    #[test]
    fn stops_when_asked() {
        let mut n = 0;
        for_each_event(
            "data: 1\n\ndata: 2\n\n".as_bytes(),
            |_| {
                n += 1;
                Ok::<_, String>(false)
            },
            |e| e.to_string(),
        )
        .expect("parses");
        assert_eq!(n, 1);
    }
}
