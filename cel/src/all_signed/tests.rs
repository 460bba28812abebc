//! The recognised shape against the interpreter: the same answers, errors
//! and verifier calls, in the same order.

use super::*;
use crate::verify_lib::VerifierError;
use crate::{compile, convert, Bindings};
use cel::Value;
use std::sync::{Arc, Mutex};

/// What each image answers: a count of verified attestors, or an error
/// (an image that did not resolve, with that message).
type Answers = [(&'static str, Result<i64, &'static str>)];

const IDIOM: &str =
    "images.containers.map(i, verifyImageSignatures(i, [attestors.cosign])).all(n, n > 0)";

/// Answers each image as scripted (a count, or an error) and records the
/// calls it got.
struct Scripted {
    answers: Vec<(&'static str, Result<i64, &'static str>)>,
    calls: Mutex<Vec<(String, Vec<String>)>>,
}

impl ImageVerifier for Scripted {
    fn verify_image_signatures(
        &self,
        image: &str,
        attestors: &[String],
    ) -> Result<i64, VerifierError> {
        self.calls
            .lock()
            .expect("calls")
            .push((image.to_string(), attestors.to_vec()));
        let (_, answer) = self
            .answers
            .iter()
            .find(|(i, _)| *i == image)
            .expect("a scripted image");
        answer.map_err(|why| VerifierError::Unresolved(why.to_string()))
    }
    fn verify_attestation_signatures(
        &self,
        _: &str,
        _: &str,
        _: &[String],
    ) -> Result<i64, VerifierError> {
        Err(VerifierError::NotVerified)
    }
    fn extract_payload(&self, _: &str, _: &str) -> Result<serde_json::Value, VerifierError> {
        Err(VerifierError::NotVerified)
    }
}

fn strings(items: &[&str]) -> Value {
    Value::List(Arc::new(
        items
            .iter()
            .map(|s| convert::string(s.to_string()))
            .collect(),
    ))
}

/// `images` with one list, `attestors` as the engine binds them.
fn bindings(list: &str, images: &[&str], verifier: Arc<Scripted>) -> Bindings {
    let attestor = |name: &str| {
        let value = convert::string_map([
            ("name".to_string(), convert::string(name.to_string())),
            ("type".to_string(), convert::string("cosign")),
        ]);
        (name.to_string(), value)
    };
    Bindings::builder()
        .value(
            "images",
            convert::string_map([(list.to_string(), strings(images))]),
        )
        .value(
            "attestors",
            convert::string_map([attestor("cosign"), attestor("backup")]),
        )
        .verifier(verifier)
        .build()
}

fn scripted(answers: &Answers) -> Arc<Scripted> {
    Arc::new(Scripted {
        answers: answers.to_vec(),
        calls: Mutex::new(Vec::new()),
    })
}

/// Runs `source` both ways over `images` and asserts the same outcome and
/// the same calls.
fn same_both_ways(
    source: &str,
    images: &[&str],
    answers: &[(&'static str, Result<i64, &'static str>)],
) {
    let shape = AllSigned::recognise(source).expect("recognised");
    let by_interpreter = scripted(answers);
    let expected = compile(source).expect("compiles").eval(&bindings(
        &shape.list,
        images,
        by_interpreter.clone(),
    ));
    let natively = scripted(answers);
    let list: Vec<String> = images.iter().map(|s| s.to_string()).collect();
    let got = shape
        .eval(&list, &*natively)
        .map(Value::Bool)
        .map_err(crate::EvalError::from);
    assert_eq!(got, expected, "{source} over {images:?}");
    assert_eq!(
        *natively.calls.lock().expect("calls"),
        *by_interpreter.calls.lock().expect("calls"),
        "{source} over {images:?}"
    );
}

#[test]
fn recognises_the_idiom_with_any_names_and_spacing() {
    let want = |list: &str, attestors: &[&str]| AllSigned {
        list: list.into(),
        attestors: attestors.iter().map(|a| a.to_string()).collect(),
    };
    assert_eq!(
        AllSigned::recognise(IDIOM),
        Some(want("containers", &["cosign"]))
    );
    let spaced = "images.initContainers.map(image,\n  verifyImageSignatures(image, [attestors.cosign, attestors.backup])\n).all(e, e > 0)";
    assert_eq!(
        AllSigned::recognise(spaced),
        Some(want("initContainers", &["cosign", "backup"]))
    );
}

#[test]
fn anything_else_is_left_to_the_interpreter() {
    for source in [
        "images.containers.map(i, verifyImageSignatures(i, [attestors.cosign])).all(n, n >= 1)",
        "images.containers.map(i, verifyImageSignatures(i, [attestors.cosign])).exists(n, n > 0)",
        "images.containers.map(i, verifyImageSignatures(j, [attestors.cosign])).all(n, n > 0)",
        "images.containers.map(i, verifyImageSignatures(i, [attestors.cosign])).all(n, m > 0)",
        "images.containers.map(i, verifyImageSignatures(i, [attestors.cosign,])).all(n, n > 0)",
        "images.containers.map(images, verifyImageSignatures(images, [attestors.cosign])).all(n, n > 0)",
        "images.containers.map(i, verifyImageSignatures(i, [attestors.cosign])).all(n, n > 0) // all",
        "images.containers.map(i, verifyImageSignatures(i, [attestors.cosign])).all(n, n > 0) && true",
        "images.containers.map(i, verifyImageSignatures(i, attestors.cosign)).all(n, n > 0)",
        "images.containers.map(i, verifyImageSignatures(i, [attestors['cosign']])).all(n, n > 0)",
        "images.containers.map(in, verifyImageSignatures(in, [attestors.cosign])).all(n, n > 0)",
        "images.containers.map(i, verifyImageSignatures(i, [attestors.cosign])).all(n, n > 00)",
    ] {
        assert_eq!(AllSigned::recognise(source), None, "{source}");
    }
}

#[test]
fn answers_as_the_interpreter_does() {
    let two = "images.containers.map(i, verifyImageSignatures(i, [attestors.cosign, attestors.backup])).all(n, n > 0)";
    let cases: &[(&str, &[&str], &Answers)] = &[
        (IDIOM, &[], &[]),
        (IDIOM, &["a"], &[("a", Ok(1))]),
        (IDIOM, &["a"], &[("a", Ok(0))]),
        (
            IDIOM,
            &["a", "b", "c"],
            &[("a", Ok(1)), ("b", Ok(0)), ("c", Ok(1))],
        ),
        (
            IDIOM,
            &["a", "b", "c"],
            &[("a", Ok(1)), ("b", Err("no such image")), ("c", Ok(1))],
        ),
        (IDIOM, &["a", "a"], &[("a", Ok(1))]),
        (two, &["a", "b"], &[("a", Ok(2)), ("b", Ok(1))]),
        (two, &["a", "b"], &[("a", Ok(0)), ("b", Ok(2))]),
    ];
    for (source, images, answers) in cases {
        same_both_ways(source, images, answers);
    }
}
