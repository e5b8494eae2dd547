//! Connection-level answers the router never sees: the 503 of a connection over the cap, and
//! the JSON body of an HTTP parser error (hyper answers a malformed request line, a URI over
//! its limit or headers over theirs itself, with an empty 400, 414 or 431).

use std::{
    io,
    pin::Pin,
    task::{Context, Poll, ready},
    time::Duration,
};

use axum::http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::error::{ApiError, code_of};

/// A whole `Connection: close` HTTP/1.1 response carrying the JSON error shape (the one
/// format of every response written below the router).
fn close_response(error: &ApiError, extra_headers: &str) -> Vec<u8> {
    let status = error.status;
    let body = serde_json::to_string(&error.body()).unwrap_or_default();
    format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\n{extra_headers}\
         connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes()
}

/// Answers a connection over the cap with a JSON 503 and closes it.
pub(crate) async fn refuse(mut stream: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    let error = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable",
        "too many connections; retry later",
    );
    let response = close_response(&error, "retry-after: 1\r\n");
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(&response)).await;
    let _ = stream.shutdown().await;
}

/// The JSON response that replaces hyper's own answer to a request it could not parse, if
/// `head` is one: a status line of 400, 414 or 431 with an empty body and `connection:
/// close`, a head the router never writes (every error of the router has a JSON body).
fn replace_parser_error(head: &[u8]) -> Option<Vec<u8>> {
    let (status, message) = match head.get(..13)? {
        b"HTTP/1.1 400 " => (StatusCode::BAD_REQUEST, "malformed HTTP request"),
        b"HTTP/1.1 414 " => (
            StatusCode::URI_TOO_LONG,
            "the request target is longer than the server reads",
        ),
        b"HTTP/1.1 431 " => (
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "the request headers are larger or more numerous than the server reads",
        ),
        _ => return None,
    };
    let text = std::str::from_utf8(head).ok()?;
    let lower = text.to_ascii_lowercase();
    if !(lower.ends_with("\r\n\r\n")
        && lower.contains("\r\nconnection: close\r\n")
        && lower.contains("\r\ncontent-length: 0\r\n"))
    {
        return None;
    }
    Some(close_response(
        &ApiError::new(status, code_of(status), message),
        "",
    ))
}

/// A connection whose writes pass through unchanged, except hyper's empty answer to a
/// request it could not parse, which is replaced by the same status with the JSON error shape.
pub(crate) struct JsonParserErrors<S> {
    inner: S,
    /// A replacement response not yet fully written (hyper was told it was).
    pending: Vec<u8>,
}

impl<S> JsonParserErrors<S> {
    pub(crate) fn new(inner: S) -> Self {
        Self {
            inner,
            pending: Vec::new(),
        }
    }
}

impl<S: AsyncWrite + Unpin> JsonParserErrors<S> {
    /// Writes what is pending; ready when nothing is.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.pending.is_empty() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.pending.drain(..n);
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for JsonParserErrors<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for JsonParserErrors<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        ready!(self.poll_pending(cx))?;
        if let Some(replacement) = replace_parser_error(buf) {
            self.pending = replacement;
            // Whatever is left is written by the next flush or shutdown.
            let _ = self.poll_pending(cx)?;
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        ready!(self.poll_pending(cx))?;
        // hyper writes an error's head alone; a response with a body never matches.
        if let [head] = bufs
            && let Some(replacement) = replace_parser_error(head)
        {
            self.pending = replacement;
            let _ = self.poll_pending(cx)?;
            return Poll::Ready(Ok(head.len()));
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hypers_empty_parser_errors_are_replaced() {
        let hyper_431 = b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\n\
                          content-length: 0\r\ndate: Mon, 30 Nov 2026 19:03:58 GMT\r\n\r\n";
        let out = replace_parser_error(hyper_431).expect("replaced");
        let text = String::from_utf8(out).expect("utf-8");
        let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
        assert!(head.starts_with("HTTP/1.1 431 "));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let v: serde_json::Value = serde_json::from_str(body).expect("json");
        assert_eq!(v["error"]["code"], "headers_too_large");

        // A response of the router (a body, no connection: close) is left alone.
        let ours = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n\
                     content-length: 10\r\n\r\n";
        assert!(replace_parser_error(ours).is_none());
        let ok = b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";
        assert!(replace_parser_error(ok).is_none());
    }
}
