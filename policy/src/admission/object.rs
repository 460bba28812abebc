//! An AdmissionRequest's `object` or `oldObject`: kept as the text it came
//! in, with the few things every request reads of it (its labels, its
//! `metadata.uid`, the images of its pod spec) read in one pass that builds
//! no JSON tree. The tree is parsed only when something reads the object
//! whole: a CEL expression (through [`Object::text`]), a mutation, a
//! policy under review.
//!
//! The pass reads what [`extract_lists`](crate::images::extract::extract_lists),
//! [`labels_of`](super::labels_of) and a pointer lookup read of the tree,
//! duplicate keys included (the last one wins, as it does in the tree);
//! a test holds the two to the same answers.

use crate::images::extract::{pod_spec_path, Category};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

/// One object of a request: `null` (absent) or a JSON object.
#[derive(Debug, Clone, Default)]
pub struct Object {
    /// The object's text; none for `null`.
    text: Option<Arc<str>>,
    facts: Facts,
    tree: OnceLock<Arc<Value>>,
}

/// What every request reads of an object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Facts {
    /// `metadata.labels`, string values only.
    labels: BTreeMap<String, String>,
    /// `metadata.uid`, when a string.
    uid: Option<String>,
    /// The pod spec's container images by category, when the resource has
    /// a pod spec.
    images: Option<[Vec<String>; 3]>,
}

impl Object {
    /// The object `text` (valid JSON: a JSON object or `null`) of a request
    /// for `resource` (plural, lowercase).
    pub(super) fn read(text: &str, resource: &str) -> Result<Object, serde_json::Error> {
        if text == "null" {
            return Ok(Object::default());
        }
        let path = pod_spec_path(resource);
        let mut de = serde_json::Deserializer::from_str(text);
        let facts = RootSeed { path }.deserialize(&mut de)?;
        de.end()?;
        Ok(Object {
            text: Some(Arc::from(text)),
            facts,
            tree: OnceLock::new(),
        })
    }

    /// Whether the object is absent (`null`).
    pub fn is_null(&self) -> bool {
        self.text.is_none()
    }

    /// The object's text, for the CEL variable; none for `null`.
    pub fn text(&self) -> Option<&Arc<str>> {
        self.text.as_ref()
    }

    /// The object as a tree, parsed on first use.
    pub fn tree(&self) -> &Arc<Value> {
        self.tree.get_or_init(|| {
            let parsed = self.text.as_deref().map(serde_json::from_str);
            // `read` took the whole text through the same parser, under the
            // same depth limit, or the request was refused: it parses again.
            // (Running out of memory traps, which fails the request closed.)
            Arc::new(parsed.and_then(Result::ok).unwrap_or(Value::Null))
        })
    }

    /// `metadata.labels` (string values only); none for `null`.
    pub fn labels(&self) -> Option<&BTreeMap<String, String>> {
        self.text.as_ref().map(|_| &self.facts.labels)
    }

    /// `metadata.uid`, empty when absent or not a string.
    pub fn uid(&self) -> &str {
        self.facts.uid.as_deref().unwrap_or_default()
    }

    /// The built-in image lists, as [`extract_lists`] gives them for the
    /// request's resource: all three categories for a resource with a pod
    /// spec, none for any other.
    ///
    /// [`extract_lists`]: crate::images::extract::extract_lists
    pub fn image_lists(&self) -> BTreeMap<&'static str, &[String]> {
        match (&self.facts.images, self.text.is_some()) {
            (Some(lists), true) => ivpol_refs::sort::map(
                (Category::ALL.iter().zip(lists)).map(|(c, list)| (c.as_str(), list.as_slice())),
            ),
            _ => BTreeMap::new(),
        }
    }
}

impl PartialEq for Object {
    fn eq(&self, other: &Object) -> bool {
        self.tree() == other.tree()
    }
}

/// A map key, borrowed from the text when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// A visitor that takes any JSON value: the shapes it reads go to
/// `map`/`seq`/`string`, anything else (or those it does not read) is
/// `Default`, as a tree lookup finds nothing there.
macro_rules! lenient {
    () => {
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
}

/// Skips the rest of a sequence.
fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<Skip>()?.is_some() {}
    Ok(())
}

/// Skips the rest of a map.
fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<Skip, Skip>()?.is_some() {}
    Ok(())
}

/// Strings are skipped where a map or a sequence is read.
macro_rules! no_strings {
    () => {
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
}

/// Maps are skipped where a sequence or a string is read.
macro_rules! no_maps {
    () => {
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            drain_map(map)?;
            Ok(Default::default())
        }
    };
}

/// Sequences are skipped where a map or a string is read.
macro_rules! no_seqs {
    () => {
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            drain_seq(seq)?;
            Ok(Default::default())
        }
    };
}

/// A value the pass does not read, skipped through `deserialize_any` (not
/// serde's `IgnoredAny`, which serde_json skips without counting depth):
/// so the pass refuses what nests past serde_json's depth limit, as
/// parsing the tree would, and an object that reads is one whose tree
/// parses.
#[derive(Default)]
struct Skip;

impl<'de> de::Deserialize<'de> for Skip {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Skip, D::Error> {
        d.deserialize_any(Skip)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = Skip;
    lenient!();
    no_strings!();
    no_seqs!();
    no_maps!();
}

/// A seed that reads any JSON value with itself as the visitor.
macro_rules! any_value {
    ($seed:ty, $value:ty) => {
        impl<'de> DeserializeSeed<'de> for $seed {
            type Value = $value;
            fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<$value, D::Error> {
                d.deserialize_any(self)
            }
        }
    };
}

/// The object itself: `metadata`, and the path to its pod spec.
struct RootSeed {
    path: Option<&'static [&'static str]>,
}

any_value!(RootSeed, Facts);

impl<'de> Visitor<'de> for RootSeed {
    type Value = Facts;
    lenient!();
    no_strings!();
    no_seqs!();
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Facts, A::Error> {
        let mut facts = Facts {
            // A resource with a pod spec has its three lists, empty when
            // the spec is not there.
            images: self.path.map(|_| Default::default()),
            ..Facts::default()
        };
        let spec_key = self.path.and_then(|p| p.first().copied());
        while let Some(Key(key)) = map.next_key()? {
            if key == "metadata" {
                (facts.labels, facts.uid) = map.next_value_seed(MetadataSeed)?;
            } else if Some(key.as_ref()) == spec_key {
                let rest = self.path.map_or(&[][..], |p| &p[1..]);
                facts.images = Some(map.next_value_seed(PathSeed(rest))?);
            } else {
                map.next_value::<Skip>()?;
            }
        }
        Ok(facts)
    }
}

/// `metadata`: its labels and uid.
struct MetadataSeed;

any_value!(MetadataSeed, (BTreeMap<String, String>, Option<String>));

impl<'de> Visitor<'de> for MetadataSeed {
    type Value = (BTreeMap<String, String>, Option<String>);
    lenient!();
    no_strings!();
    no_seqs!();
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut labels, mut uid) = (BTreeMap::new(), None);
        while let Some(Key(key)) = map.next_key()? {
            match key.as_ref() {
                "labels" => labels = map.next_value_seed(LabelsSeed)?,
                "uid" => uid = map.next_value_seed(StringSeed)?,
                _ => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok((labels, uid))
    }
}

/// A map's string values (`metadata.labels`).
struct LabelsSeed;

any_value!(LabelsSeed, BTreeMap<String, String>);

impl<'de> Visitor<'de> for LabelsSeed {
    type Value = BTreeMap<String, String>;
    lenient!();
    no_strings!();
    no_seqs!();
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut labels = BTreeMap::new();
        while let Some(Key(key)) = map.next_key()? {
            // The last of duplicate keys wins, whatever it is.
            match map.next_value_seed(StringSeed)? {
                Some(value) => labels.insert(key.into_owned(), value),
                None => labels.remove(key.as_ref()),
            };
        }
        Ok(labels)
    }
}

/// A string, or none for any other value.
struct StringSeed;

any_value!(StringSeed, Option<String>);

impl<'de> Visitor<'de> for StringSeed {
    type Value = Option<String>;
    lenient!();
    no_maps!();
    no_seqs!();
    fn visit_str<E>(self, v: &str) -> Result<Option<String>, E> {
        Ok(Some(v.to_string()))
    }
}

/// The rest of the path to the pod spec, then the pod spec's lists.
struct PathSeed(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for PathSeed {
    type Value = [Vec<String>; 3];
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for PathSeed {
    type Value = [Vec<String>; 3];
    lenient!();
    no_strings!();
    no_seqs!();
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut lists: [Vec<String>; 3] = Default::default();
        while let Some(Key(key)) = map.next_key()? {
            match self.0.split_first() {
                Some((next, rest)) if key == *next => {
                    lists = map.next_value_seed(PathSeed(rest))?;
                }
                None => match Category::ALL.iter().position(|c| key == c.as_str()) {
                    Some(i) => lists[i] = map.next_value_seed(ContainersSeed)?,
                    None => {
                        map.next_value::<Skip>()?;
                    }
                },
                Some(_) => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(lists)
    }
}

/// A container list: the string `image` of each container.
struct ContainersSeed;

any_value!(ContainersSeed, Vec<String>);

impl<'de> Visitor<'de> for ContainersSeed {
    type Value = Vec<String>;
    lenient!();
    no_strings!();
    no_maps!();
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
        let mut images = Vec::new();
        while let Some(image) = seq.next_element_seed(ContainerSeed)? {
            images.extend(image);
        }
        Ok(images)
    }
}

/// One container: its `image`, when a string.
struct ContainerSeed;

any_value!(ContainerSeed, Option<String>);

impl<'de> Visitor<'de> for ContainerSeed {
    type Value = Option<String>;
    lenient!();
    no_strings!();
    no_seqs!();
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
        let mut image = None;
        while let Some(Key(key)) = map.next_key()? {
            match key.as_ref() {
                "image" => image = map.next_value_seed(StringSeed)?,
                _ => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(image)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::images::extract::extract_lists;
    use serde_json::json;

    /// The pass's answers are the tree's, for `text` as `resource`.
    fn same_as_the_tree(text: &str, resource: &str) {
        let tree: Value = serde_json::from_str(text).expect("test JSON");
        let object = Object::read(text, resource).expect("reads");
        let lists = object.image_lists();
        let owned: BTreeMap<&str, Vec<String>> =
            lists.iter().map(|(c, l)| (*c, l.to_vec())).collect();
        assert_eq!(owned, extract_lists(resource, &tree), "{text}");
        assert_eq!(
            object.labels().cloned(),
            super::super::labels_of(&tree),
            "{text}"
        );
        let uid = tree.pointer("/metadata/uid").and_then(Value::as_str);
        assert_eq!(object.uid(), uid.unwrap_or_default(), "{text}");
        assert_eq!(**object.tree(), tree);
    }

    #[test]
    fn the_pass_reads_what_the_tree_gives() {
        let resources = ["pods", "deployments", "cronjobs", "configmaps"];
        let objects = [
            json!({"metadata": {"labels": {"a": "1", "n": 2}, "uid": "u"},
                   "spec": {"containers": [{"name": "c", "image": "nginx"}, {"image": 3}, "x", {"image": "busybox"}],
                            "initContainers": [{"image": "init"}], "ephemeralContainers": {"image": "no"}}})
            .to_string(),
            json!({"spec": {"template": {"spec": {"containers": [{"image": "deep"}]}}}}).to_string(),
            json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"image": "cron"}]}}}}}})
            .to_string(),
            json!({"metadata": "not an object", "spec": "nor this"}).to_string(),
            json!({"metadata": {"labels": [1, 2], "uid": 7}, "spec": [{"containers": []}]}).to_string(),
            json!({}).to_string(),
            // Duplicate keys: the last one wins, at every level.
            r#"{"spec": {"containers": [{"image": "first"}]}, "spec": {"containers": [{"image": "second"}]}}"#.into(),
            r#"{"spec": {"containers": [{"image": "a", "image": "b"}, {"image": "c", "image": 1}]}}"#.into(),
            r#"{"spec": {"containers": [{"image": "a"}], "containers": "gone"}}"#.into(),
            r#"{"metadata": {"labels": {"k": "v", "k": 1, "j": 1, "j": "w"}, "uid": "a", "uid": null}}"#.into(),
            r#"{"metadata": {"uid": "x"}, "metadata": {"labels": {}}}"#.into(),
            r#"{"spec": {"template": {"spec": {"containers": [{"image": "t1"}]}}, "template": 5}}"#.into(),
            // Escaped keys and values.
            r#"{"spec": {"cont\u0061iners": [{"im\u0061ge": "esc\u0061ped\n"}]}, "metad\u0061ta": {"labels": {"\u006b": "\u0076"}}}"#.into(),
            r#"{"spec": {"containers": [{"image": "x", "env": [{"name": "image", "value": {"image": "no"}}]}]}}"#.into(),
        ];
        for text in &objects {
            for resource in resources {
                same_as_the_tree(text, resource);
            }
        }
    }

    #[test]
    fn null_is_an_absent_object() {
        let object = Object::read("null", "pods").expect("reads");
        assert!(object.is_null());
        assert_eq!(object.labels(), None);
        assert!(object.image_lists().is_empty());
        assert_eq!(**object.tree(), Value::Null);
    }

    /// Objects written at random along the paths the pass reads (each
    /// step taken or not, and any value where it ends), with other keys,
    /// every kind of value and duplicate keys.
    #[test]
    fn random_objects_read_as_their_trees() {
        const PATHS: [&[&str]; 5] = [
            &["metadata", "labels", "*"],
            &["metadata", "uid"],
            &["spec", "containers", "[]", "image"],
            &["spec", "template", "spec", "initContainers", "[]", "image"],
            &[
                "spec",
                "jobTemplate",
                "spec",
                "template",
                "spec",
                "ephemeralContainers",
                "[]",
                "image",
            ],
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let (mut images, mut labels) = (0, 0);
        for _ in 0..3000 {
            let text = random_object(&mut seed, 0, &PATHS);
            for resource in ["pods", "deployments", "cronjobs"] {
                same_as_the_tree(&text, resource);
                let object = Object::read(&text, resource).expect("reads");
                images += usize::from(object.image_lists().values().any(|l| !l.is_empty()));
                labels += usize::from(object.labels().is_some_and(|l| !l.is_empty()));
            }
        }
        // Enough of them have something to find.
        assert!(
            images > 150 && labels > 300,
            "{images} with images, {labels} with labels"
        );
    }

    fn next(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    fn pick<'a>(seed: &mut u64, from: &[&'a str]) -> &'a str {
        from[(next(seed) % from.len() as u64) as usize]
    }

    /// An object whose entries follow `paths` (their next step) or not.
    fn random_object(seed: &mut u64, depth: u32, paths: &[&[&str]]) -> String {
        let entries: Vec<String> = (0..1 + next(seed) % 4)
            .map(|_| {
                let path = paths.get((next(seed) % (paths.len() as u64 + 1)) as usize);
                let (key, rest) = match path.and_then(|p| p.split_first()) {
                    Some((&"*", rest)) => (pick(seed, &["a", "b", "c"]), rest),
                    Some((key, rest)) => (*key, rest),
                    None => (
                        pick(seed, &["name", "image", "spec", "im\\u0061ge"]),
                        &[][..],
                    ),
                };
                format!("\"{key}\": {}", random_value(seed, depth + 1, rest))
            })
            .collect();
        format!("{{{}}}", entries.join(", "))
    }

    /// A value along `rest` of a path, most often; anything, otherwise.
    fn random_value(seed: &mut u64, depth: u32, rest: &[&str]) -> String {
        let follow = !rest.is_empty() && depth < 10 && !next(seed).is_multiple_of(5);
        match (follow, rest.first()) {
            (true, Some(&"[]")) => {
                let items: Vec<String> = (0..next(seed) % 4)
                    .map(|_| random_value(seed, depth + 1, &rest[1..]))
                    .collect();
                format!("[{}]", items.join(", "))
            }
            (true, _) => random_object(seed, depth, &[rest]),
            _ => match next(seed) % 6 {
                0..=2 => format!("\"s{}\"", next(seed) % 4),
                3 => "null".into(),
                4 => "[1, {\"image\": \"x\"}]".into(),
                _ => format!("{}", next(seed) % 100),
            },
        }
    }
}
