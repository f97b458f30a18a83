//! The top level of a message that could not be read whole.

/// The top level of a JSON-RPC message that could not be read whole (too deep, not
/// UTF-8, malformed inside): enough to tell whether it answers a waiting request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// The `id` member's text as sent, if the object has one.
    pub id: Option<String>,
    /// Whether the object has a `method` member (a request or notification).
    pub has_method: bool,
}

/// Scans the top-level members of an object text without reading nested values, so
/// neither depth nor bad bytes inside them stop it. `None` when the text is not an
/// object or its top level cannot be followed.
pub fn scan_envelope(bytes: &[u8]) -> Option<Envelope> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let ws = |pos: &mut usize| {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(*pos) {
            *pos += 1;
        }
    };
    let mut pos = 0;
    ws(&mut pos);
    if bytes.get(pos) != Some(&b'{') {
        return None;
    }
    pos += 1;
    let mut envelope = Envelope {
        id: None,
        has_method: false,
    };
    loop {
        ws(&mut pos);
        match bytes.get(pos)? {
            b'}' => return Some(envelope),
            b'"' => {}
            _ => return None,
        }
        let key_end = skip_string(bytes, pos)?;
        let key = &bytes[pos + 1..key_end - 1];
        pos = key_end;
        ws(&mut pos);
        if bytes.get(pos) != Some(&b':') {
            return None;
        }
        pos += 1;
        ws(&mut pos);
        let value_start = pos;
        pos = skip_value(bytes, pos)?;
        match key {
            b"id" => {
                let raw = String::from_utf8_lossy(&bytes[value_start..pos]);
                envelope.id = Some(raw.trim_end().to_string());
            }
            b"method" => envelope.has_method = true,
            _ => {}
        }
        ws(&mut pos);
        match bytes.get(pos)? {
            b',' => pos += 1,
            b'}' => return Some(envelope),
            _ => return None,
        }
    }
}

/// The position just past the string starting at `pos` (a quote).
fn skip_string(bytes: &[u8], mut pos: usize) -> Option<usize> {
    pos += 1;
    loop {
        match bytes.get(pos)? {
            b'"' => return Some(pos + 1),
            b'\\' => pos += 2,
            _ => pos += 1,
        }
    }
}

/// The position just past the value starting at `pos`, counting brackets instead of
/// reading what is inside them.
fn skip_value(bytes: &[u8], mut pos: usize) -> Option<usize> {
    let mut depth = 0usize;
    loop {
        match bytes.get(pos)? {
            b'"' => {
                pos = skip_string(bytes, pos)?;
                if depth == 0 {
                    return Some(pos);
                }
            }
            b'{' | b'[' => {
                depth += 1;
                pos += 1;
            }
            b'}' | b']' if depth == 0 => return Some(pos),
            b'}' | b']' => {
                depth -= 1;
                pos += 1;
                if depth == 0 {
                    return Some(pos);
                }
            }
            b',' if depth == 0 => return Some(pos),
            _ => pos += 1,
        }
    }
}
