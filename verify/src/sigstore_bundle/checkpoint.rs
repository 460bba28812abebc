//! Log checkpoints: C2SP signed notes (`c2sp.org/signed-note`) whose text is
//! a `c2sp.org/tlog-checkpoint` body.
//!
//! ```text
//! <origin>\n<tree size>\n<base64 root hash>\n[extra lines\n]
//! \n
//! — <key name> <base64(4-byte key hint || signature)>\n
//! ...
//! ```

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use crate::Reason;

crate::debug_as_display!(CheckpointError);
/// Why a checkpoint (a signed note) could not be read. All of these are
/// [`Reason::Malformed`]; the transparency-log stage classes them.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    /// The note is over [`MAX_NOTE_BYTES`] (its size).
    #[error("checkpoint is {0} bytes, more than the {MAX_NOTE_BYTES} allowed")]
    TooLarge(usize),
    /// No blank line separates the text from the signatures.
    #[error("checkpoint has no blank line between its text and its signatures")]
    NoSeparator,
    /// More than one blank line.
    #[error("checkpoint has more than one blank line")]
    SeveralSeparators,
    /// Nothing after the blank line.
    #[error("checkpoint has no signature lines")]
    NoSignatures,
    /// The signature block lacks its final newline.
    #[error("checkpoint's signature block does not end with a newline")]
    UnterminatedSignatures,
    /// More than [`MAX_NOTE_SIGNATURES`] signature lines.
    #[error("checkpoint has more than {MAX_NOTE_SIGNATURES} signature lines")]
    TooManySignatures,
    /// A signature line that is not `— <name> <base64>`.
    #[error("malformed checkpoint signature line {0:?}")]
    BadSignatureLine(String),
    /// A signature too short to hold a key hint and a signature (its signer).
    #[error("checkpoint signature from {0:?} is too short")]
    ShortSignature(String),
    /// The text lacks its final newline.
    #[error("checkpoint text does not end with a newline")]
    UnterminatedText,
    /// Fewer than the three lines a checkpoint needs.
    #[error("checkpoint has too few lines: it needs an origin, a tree size and a root hash")]
    TooFewLines,
    /// An empty origin line.
    #[error("checkpoint origin is empty")]
    EmptyOrigin,
    /// A tree size that is not a decimal number.
    #[error("checkpoint tree size {0:?} is not a decimal number")]
    SizeNotDecimal(String),
    /// A tree size past `u64`.
    #[error("checkpoint tree size {0:?} is too large")]
    SizeTooLarge(String),
    /// A root hash that is not base64.
    #[error("checkpoint root hash {0:?} is not base64")]
    RootNotBase64(String),
    /// A root hash that is not 32 bytes (its length).
    #[error("checkpoint root hash is {0} bytes, not 32")]
    RootLength(usize),
    /// An empty extension line.
    #[error("checkpoint has an empty extension line")]
    EmptyExtension,
}

impl CheckpointError {
    /// The class of this failure: an unreadable checkpoint.
    pub fn reason(&self) -> Reason {
        Reason::Malformed
    }
}

/// At most this many signature lines are read from one note.
pub const MAX_NOTE_SIGNATURES: usize = 100;
/// The largest note accepted, in bytes.
pub const MAX_NOTE_BYTES: usize = 64 * 1024;

/// One signature line of a signed note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteSignature {
    /// The signer's key name.
    pub name: String,
    /// The first four bytes of the key's id.
    pub key_hint: [u8; 4],
    /// The signature over the note's text.
    pub signature: Vec<u8>,
}

/// A signed note split into its signed text and its signature lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedNote {
    /// The signed bytes: the text up to and including its final newline.
    pub text: String,
    /// Its signature lines, in order.
    pub signatures: Vec<NoteSignature>,
}

/// A checkpoint body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The log's origin line.
    pub origin: String,
    /// The tree size.
    pub size: u64,
    /// The tree's root hash.
    pub root_hash: [u8; 32],
    /// Lines after the root hash.
    pub extra: Vec<String>,
}

/// A signed checkpoint: the note and its parsed body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedCheckpoint {
    /// The signed note.
    pub note: SignedNote,
    /// Its text, parsed.
    pub checkpoint: Checkpoint,
}

impl SignedNote {
    /// Splits a note into text and signature lines, bounded in bytes and lines.
    pub fn parse(envelope: &str) -> Result<SignedNote, CheckpointError> {
        if envelope.len() > MAX_NOTE_BYTES {
            return Err(CheckpointError::TooLarge(envelope.len()));
        }
        let mut parts = envelope.match_indices("\n\n");
        let split = match (parts.next(), parts.next()) {
            (Some((i, _)), None) if !envelope[i + 2..].starts_with('\n') => i,
            (None, _) => return Err(CheckpointError::NoSeparator),
            (Some(_), _) => return Err(CheckpointError::SeveralSeparators),
        };
        let text = &envelope[..split + 1];
        let sigs = &envelope[split + 2..];
        if sigs.is_empty() {
            return Err(CheckpointError::NoSignatures);
        }
        let Some(sigs) = sigs.strip_suffix('\n') else {
            return Err(CheckpointError::UnterminatedSignatures);
        };
        let mut signatures = Vec::new();
        for line in sigs.split('\n') {
            if signatures.len() >= MAX_NOTE_SIGNATURES {
                return Err(CheckpointError::TooManySignatures);
            }
            signatures.push(parse_signature_line(line)?);
        }
        Ok(SignedNote {
            text: text.to_string(),
            signatures,
        })
    }
}

fn parse_signature_line(line: &str) -> Result<NoteSignature, CheckpointError> {
    let bad = || CheckpointError::BadSignatureLine(line.to_string());
    let rest = line.strip_prefix("\u{2014} ").ok_or_else(bad)?;
    let (name, sig_b64) = rest.split_once(' ').ok_or_else(bad)?;
    if name.is_empty()
        || name.contains('+')
        || name.chars().any(char::is_whitespace)
        || sig_b64.is_empty()
        || sig_b64.contains(' ')
    {
        return Err(bad());
    }
    let raw = STANDARD.decode(sig_b64).map_err(|_| bad())?;
    if raw.len() < 5 {
        return Err(CheckpointError::ShortSignature(name.to_string()));
    }
    let (hint, signature) = raw.split_at(4);
    let key_hint = <[u8; 4]>::try_from(hint).map_err(|_| bad())?;
    Ok(NoteSignature {
        name: name.to_string(),
        key_hint,
        signature: signature.to_vec(),
    })
}

impl Checkpoint {
    /// Parses a checkpoint body (the signed text of the note).
    pub fn parse(text: &str) -> Result<Checkpoint, CheckpointError> {
        let Some(body) = text.strip_suffix('\n') else {
            return Err(CheckpointError::UnterminatedText);
        };
        let lines: Vec<&str> = body.split('\n').collect();
        let [origin, size, root, extra @ ..] = lines.as_slice() else {
            return Err(CheckpointError::TooFewLines);
        };
        if origin.is_empty() {
            return Err(CheckpointError::EmptyOrigin);
        }
        if size.is_empty()
            || !size.bytes().all(|b| b.is_ascii_digit())
            || (size.len() > 1 && size.starts_with('0'))
        {
            return Err(CheckpointError::SizeNotDecimal(size.to_string()));
        }
        let size: u64 = size
            .parse()
            .map_err(|_| CheckpointError::SizeTooLarge(size.to_string()))?;
        let root_bytes = STANDARD
            .decode(root)
            .map_err(|_| CheckpointError::RootNotBase64(root.to_string()))?;
        let root_hash = <[u8; 32]>::try_from(root_bytes.as_slice())
            .map_err(|_| CheckpointError::RootLength(root_bytes.len()))?;
        if extra.iter().any(|l| l.is_empty()) {
            return Err(CheckpointError::EmptyExtension);
        }
        Ok(Checkpoint {
            origin: origin.to_string(),
            size,
            root_hash,
            extra: extra.iter().map(|s| s.to_string()).collect(),
        })
    }

    /// Rekor v1 origins are `<hostname> - <tree id>`; Rekor v2 (and other
    /// C2SP logs) use the bare log name.
    pub fn rekor_v1_tree_id(&self) -> Option<&str> {
        let (_, id) = self.origin.rsplit_once(" - ")?;
        (!id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())).then_some(id)
    }
}

impl SignedCheckpoint {
    /// Reads a signed note and the checkpoint in its text.
    pub fn parse(envelope: &str) -> Result<SignedCheckpoint, CheckpointError> {
        let note = SignedNote::parse(envelope)?;
        let checkpoint = Checkpoint::parse(&note.text)?;
        Ok(SignedCheckpoint { note, checkpoint })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "rs1YPY0ydAV0lxgfrq5pE4oRpUJwo3syeps5+eGUTDI=";
    const SIG: &str = "8w1amdbj1mjNN674dHAkD92+QZoEgBC7o0mXYSTRluDjQrOPjrps3zQB9ut+ShLepyZPsWBDi5IB3yXyjgjQT6OG9A8=";

    fn note(body: &str, sigs: &[(&str, &str)]) -> String {
        let mut s = format!("{body}\n");
        for (name, sig) in sigs {
            s.push_str(&format!("\u{2014} {name} {sig}\n"));
        }
        s
    }

    #[test]
    fn parses_a_rekor_v2_checkpoint_with_cosignatures() {
        let body = format!("log2025-alpha1.rekor.sigstage.dev\n736\n{ROOT}\n");
        let text = note(
            &body,
            &[
                ("log2025-alpha1.rekor.sigstage.dev", SIG),
                ("witness.example/w1", "sE1vjwAAAABopPLqcjWVAVGAl48d2/LUcCJsxS4CoGtBo8oagCPd7pWZvtei7ieKnoopQqgf3KCun6hyT2YAXBmzTIRsWZInogTDAw=="),
            ],
        );
        let cp = SignedCheckpoint::parse(&text).unwrap();
        assert_eq!(cp.note.text, body);
        assert_eq!(cp.checkpoint.origin, "log2025-alpha1.rekor.sigstage.dev");
        assert_eq!(cp.checkpoint.size, 736);
        assert_eq!(cp.checkpoint.root_hash[..2], [0xae, 0xcd]);
        assert!(cp.checkpoint.extra.is_empty());
        assert_eq!(cp.checkpoint.rekor_v1_tree_id(), None);
        assert_eq!(cp.note.signatures.len(), 2);
        assert_eq!(cp.note.signatures[0].key_hint, [0xf3, 0x0d, 0x5a, 0x99]);
        assert_eq!(cp.note.signatures[0].signature.len(), 64);
        assert_eq!(cp.note.signatures[1].name, "witness.example/w1");
    }

    #[test]
    fn parses_a_rekor_v1_checkpoint_with_extra_lines() {
        let body = format!("rekor.sigstore.dev - 2605736670972794746\n23\n{ROOT}\nTimestamp: 1689177396617352539\n");
        let cp = SignedCheckpoint::parse(&note(&body, &[("rekor.sigstore.dev", SIG)])).unwrap();
        assert_eq!(
            cp.checkpoint.rekor_v1_tree_id(),
            Some("2605736670972794746")
        );
        assert_eq!(cp.checkpoint.extra, vec!["Timestamp: 1689177396617352539"]);
        assert_eq!(cp.note.text, body);
    }

    #[test]
    fn rejects_malformed_notes() {
        let body = format!("origin\n1\n{ROOT}\n");
        let fails = |note: &str, e: CheckpointError| {
            assert_eq!(SignedNote::parse(note), Err(e), "{note:?}");
        };
        let bad_line = |l: &str| CheckpointError::BadSignatureLine(l.into());
        // no signatures at all
        fails(&format!("{body}\n"), CheckpointError::NoSignatures);
        // no blank line
        fails(&body, CheckpointError::NoSeparator);
        // two blank lines, together or apart
        fails(
            &format!("{body}\n\n\u{2014} a {SIG}\n"),
            CheckpointError::SeveralSeparators,
        );
        fails(
            &format!("{body}\n\u{2014} a {SIG}\n\n\u{2014} a {SIG}\n"),
            CheckpointError::SeveralSeparators,
        );
        // signature block without a trailing newline
        fails(
            &format!("{body}\n\u{2014} a {SIG}"),
            CheckpointError::UnterminatedSignatures,
        );
        // hyphen instead of an em dash
        fails(
            &format!("{body}\n- a {SIG}\n"),
            bad_line(&format!("- a {SIG}")),
        );
        // bad base64, too short
        fails(
            &format!("{body}\n\u{2014} a !!!!\n"),
            bad_line("\u{2014} a !!!!"),
        );
        fails(
            &format!("{body}\n\u{2014} a AAAA\n"),
            CheckpointError::ShortSignature("a".into()),
        );
        // a name with a plus, or missing
        fails(
            &format!("{body}\n\u{2014} a+b {SIG}\n"),
            bad_line(&format!("\u{2014} a+b {SIG}")),
        );
        fails(
            &format!("{body}\n\u{2014}  {SIG}\n"),
            bad_line(&format!("\u{2014}  {SIG}")),
        );
        // too many signatures
        let many = note(&body, &vec![("a", SIG); MAX_NOTE_SIGNATURES + 1]);
        fails(&many, CheckpointError::TooManySignatures);
    }

    #[test]
    fn rejects_malformed_checkpoint_bodies() {
        let ok = |b: &str| Checkpoint::parse(b);
        let fails = |b: &str, e: CheckpointError| {
            assert_eq!(Checkpoint::parse(b), Err(e), "{b:?}");
        };
        assert!(ok(&format!("o\n1\n{ROOT}\n")).is_ok());
        // missing origin / size / root
        fails(&format!("1\n{ROOT}\n"), CheckpointError::TooFewLines);
        fails(&format!("o\n{ROOT}\n"), CheckpointError::TooFewLines);
        fails("o\n1\n", CheckpointError::TooFewLines);
        fails(&format!("\n1\n{ROOT}\n"), CheckpointError::EmptyOrigin);
        // bad sizes
        for size in ["-1", "+1", "01", "1.0", "", "0x10"] {
            fails(
                &format!("o\n{size}\n{ROOT}\n"),
                CheckpointError::SizeNotDecimal(size.into()),
            );
        }
        fails(
            &format!("o\n18446744073709551616\n{ROOT}\n"),
            CheckpointError::SizeTooLarge("18446744073709551616".into()),
        );
        // bad roots
        fails(
            "o\n1\nnot base64!\n",
            CheckpointError::RootNotBase64("not base64!".into()),
        );
        fails("o\n1\nAAAA\n", CheckpointError::RootLength(3));
        // no trailing newline
        fails(&format!("o\n1\n{ROOT}"), CheckpointError::UnterminatedText);
    }
}
