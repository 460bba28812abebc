//! A minimal CBOR (RFC 8949) writer: just the items a COSE_Sign1 envelope
//! needs. Writing the bytes here, rather than through a CBOR crate, keeps
//! every byte of a generated envelope under the test's control.

/// A CBOR data item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cbor {
    Int(i64),
    Bytes(Vec<u8>),
    Text(String),
    Array(Vec<Cbor>),
    /// Entries in the order given; [`Cbor::sorted_map`] orders them
    /// canonically.
    Map(Vec<(Cbor, Cbor)>),
    Tag(u64, Box<Cbor>),
}

impl Cbor {
    pub fn text(s: &str) -> Cbor {
        Cbor::Text(s.to_string())
    }

    /// A map in RFC 8949 §4.2.1 deterministic order (by encoded key bytes),
    /// as notation's encoder writes it.
    pub fn sorted_map(mut entries: Vec<(Cbor, Cbor)>) -> Cbor {
        entries.sort_by_key(|(k, _)| k.encode());
        Cbor::Map(entries)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Cbor::Int(i) if *i >= 0 => head(0, *i as u64, out),
            // Major type 1 holds -1 - n.
            Cbor::Int(i) => head(1, (-1 - *i) as u64, out),
            Cbor::Bytes(b) => {
                head(2, b.len() as u64, out);
                out.extend_from_slice(b);
            }
            Cbor::Text(s) => {
                head(3, s.len() as u64, out);
                out.extend_from_slice(s.as_bytes());
            }
            Cbor::Array(items) => {
                head(4, items.len() as u64, out);
                items.iter().for_each(|i| i.write(out));
            }
            Cbor::Map(entries) => {
                head(5, entries.len() as u64, out);
                for (k, v) in entries {
                    k.write(out);
                    v.write(out);
                }
            }
            Cbor::Tag(tag, inner) => {
                head(6, *tag, out);
                inner.write(out);
            }
        }
    }
}

/// The initial byte(s) of an item: major type and argument, shortest form.
fn head(major: u8, arg: u64, out: &mut Vec<u8>) {
    let m = major << 5;
    match arg {
        0..=23 => out.push(m | arg as u8),
        24..=0xff => out.extend([m | 24, arg as u8]),
        0x100..=0xffff => {
            out.push(m | 25);
            out.extend((arg as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(m | 26);
            out.extend((arg as u32).to_be_bytes());
        }
        _ => {
            out.push(m | 27);
            out.extend(arg.to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_rfc8949_appendix_a_examples() {
        assert_eq!(Cbor::Int(0).encode(), [0x00]);
        assert_eq!(Cbor::Int(24).encode(), [0x18, 0x18]);
        assert_eq!(Cbor::Int(1000).encode(), [0x19, 0x03, 0xe8]);
        assert_eq!(Cbor::Int(-1).encode(), [0x20]);
        assert_eq!(Cbor::Int(-37).encode(), [0x38, 0x24]);
        assert_eq!(Cbor::text("a").encode(), [0x61, 0x61]);
        assert_eq!(Cbor::Bytes(vec![1, 2]).encode(), [0x42, 1, 2]);
        assert_eq!(
            Cbor::Tag(1, Box::new(Cbor::Int(1_363_896_240))).encode(),
            [0xc1, 0x1a, 0x51, 0x4b, 0x67, 0xb0]
        );
        let m = Cbor::sorted_map(vec![
            (Cbor::text("b"), Cbor::Int(2)),
            (Cbor::Int(1), Cbor::Array(vec![Cbor::Int(2), Cbor::Int(3)])),
        ]);
        assert_eq!(m.encode(), [0xa2, 0x01, 0x82, 0x02, 0x03, 0x61, 0x62, 0x02]);
    }
}
