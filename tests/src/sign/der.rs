//! A minimal DER writer: just what X.509 certificates and SPKI need. Every
//! byte of a generated certificate is chosen here, so a test can make exactly
//! the certificate it wants (critical flags, raw extension values, SCTs).

/// A tag-length-value with definite, minimal length.
pub fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .iter()
            .copied()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

pub fn seq(parts: &[Vec<u8>]) -> Vec<u8> {
    tlv(0x30, &parts.concat())
}

pub fn set(parts: &[Vec<u8>]) -> Vec<u8> {
    tlv(0x31, &parts.concat())
}

/// A non-negative INTEGER from big-endian magnitude bytes.
pub fn uint(bytes: &[u8]) -> Vec<u8> {
    let mut b: Vec<u8> = bytes.iter().copied().skip_while(|b| *b == 0).collect();
    if b.is_empty() {
        b.push(0);
    }
    if b[0] & 0x80 != 0 {
        b.insert(0, 0);
    }
    tlv(0x02, &b)
}

pub fn int(v: u64) -> Vec<u8> {
    uint(&v.to_be_bytes())
}

pub fn boolean(v: bool) -> Vec<u8> {
    tlv(0x01, &[if v { 0xff } else { 0x00 }])
}

pub fn null() -> Vec<u8> {
    vec![0x05, 0x00]
}

pub fn octets(b: &[u8]) -> Vec<u8> {
    tlv(0x04, b)
}

/// A BIT STRING with no unused bits.
pub fn bits(b: &[u8]) -> Vec<u8> {
    let mut c = vec![0u8];
    c.extend_from_slice(b);
    tlv(0x03, &c)
}

pub fn utf8(s: &str) -> Vec<u8> {
    tlv(0x0c, s.as_bytes())
}

pub fn printable(s: &str) -> Vec<u8> {
    tlv(0x13, s.as_bytes())
}

/// `[n] EXPLICIT` (constructed context tag).
pub fn explicit(n: u8, inner: &[u8]) -> Vec<u8> {
    tlv(0xa0 | n, inner)
}

/// `[n] IMPLICIT` primitive (e.g. GeneralName rfc822Name = [1], URI = [6]).
pub fn implicit(n: u8, content: &[u8]) -> Vec<u8> {
    tlv(0x80 | n, content)
}

/// An OBJECT IDENTIFIER from its dotted form.
pub fn oid(dotted: &str) -> Vec<u8> {
    let arcs: Vec<u64> = dotted
        .split('.')
        .map(|a| a.parse().expect("numeric OID arc"))
        .collect();
    assert!(arcs.len() >= 2, "OID {dotted} is too short");
    let mut body = Vec::new();
    let mut push = |mut v: u64| {
        let mut tmp = vec![(v & 0x7f) as u8];
        v >>= 7;
        while v > 0 {
            tmp.push(0x80 | (v & 0x7f) as u8);
            v >>= 7;
        }
        tmp.reverse();
        body.extend(tmp);
    };
    push(arcs[0] * 40 + arcs[1]);
    for a in &arcs[2..] {
        push(*a);
    }
    tlv(0x06, &body)
}

/// UTCTime before 2050, GeneralizedTime from then on (RFC 5280 §4.1.2.5).
pub fn time(unix: i64) -> Vec<u8> {
    let (y, mo, d, h, mi, s) = super::civil(unix);
    if (1950..2050).contains(&y) {
        tlv(
            0x17,
            format!("{:02}{mo:02}{d:02}{h:02}{mi:02}{s:02}Z", y % 100).as_bytes(),
        )
    } else {
        tlv(
            0x18,
            format!("{y:04}{mo:02}{d:02}{h:02}{mi:02}{s:02}Z").as_bytes(),
        )
    }
}

/// Splits one TLV off the front: (tag, content, rest).
pub fn read(input: &[u8]) -> (u8, &[u8], &[u8]) {
    let tag = input[0];
    let (len, hdr) = if input[1] < 0x80 {
        (input[1] as usize, 2)
    } else {
        let n = (input[1] & 0x7f) as usize;
        let len = input[2..2 + n]
            .iter()
            .fold(0usize, |a, b| (a << 8) | *b as usize);
        (len, 2 + n)
    };
    (tag, &input[hdr..hdr + len], &input[hdr + len..])
}

pub fn pem(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}
