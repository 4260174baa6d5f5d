//! Compiles the architecture definitions of `../arch-defs` into the library: every
//! `<arch>.yaml` is parsed here, its shared groups are merged in, and the result is emitted as
//! static Rust data, so loading a catalog at run time parses no YAML and reads no files.

use std::collections::BTreeSet;
use std::fmt::Write;
use std::{env, fs, path::Path};

#[path = "build/schema.rs"]
#[allow(dead_code)]
mod schema;

use schema::{ArchFile, BlockEntry, CounterEntry, SharedFile};

fn yaml_files(dir: &Path) -> Vec<(String, std::path::PathBuf)> {
    let mut files: Vec<_> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .map(|path| {
            (
                path.file_stem()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
                path,
            )
        })
        .collect();
    files.sort();
    files
}

fn read(path: &Path) -> String {
    println!("cargo:rerun-if-changed={}", path.display());
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn option(value: &Option<String>) -> String {
    match value {
        Some(text) => format!("Some({text:?})"),
        None => "None".into(),
    }
}

fn block_code(b: &BlockEntry) -> String {
    format!(
        "BuiltinBlock {{ name: {:?}, aql_block_id: {}, counters_per_pass: {}, instances_per_xcc: {}, scaled_by_cus: {}, per_xcc: {}, dimensions: &{:?}, budget: {}, max_event_id: {:?} }}",
        b.name, b.aql_block_id, b.counters_per_pass, b.instances_per_xcc, b.scaled_by_cus, b.per_xcc, b.dimensions, option(&b.budget), b.max_event_id
    )
}

fn counter_code(c: &CounterEntry) -> String {
    format!(
        "BuiltinCounter {{ name: {:?}, description: {:?}, unit: {}, block: {}, event: {:?}, expression: {} }}",
        c.name, c.description, option(&c.unit), option(&c.block), c.event, option(&c.expression)
    )
}

fn main() {
    let manifest = env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let defs = Path::new(&manifest).join("../arch-defs");
    println!("cargo:rerun-if-changed={}", defs.display());
    println!("cargo:rerun-if-changed={}", defs.join("shared").display());
    let shared: Vec<(String, SharedFile)> = yaml_files(&defs.join("shared"))
        .into_iter()
        .map(|(name, path)| {
            let file = serde_saphyr::from_str(&read(&path))
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (name, file)
        })
        .collect();

    let mut code = String::from("static BUILTIN: &[BuiltinArch] = &[\n");
    for (name, path) in yaml_files(&defs) {
        let file: ArchFile = serde_saphyr::from_str(&read(&path))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            file.architecture,
            name,
            "{} describes another architecture",
            path.display()
        );
        let mut blocks: Vec<&BlockEntry> = Vec::new();
        let mut counters: Vec<&CounterEntry> = Vec::new();
        for group in &file.include {
            let (_, shared) = shared.iter().find(|(n, _)| n == group).unwrap_or_else(|| {
                panic!(
                    "{}: included group '{group}' does not exist",
                    path.display()
                )
            });
            assert!(
                shared.architectures.contains(&name),
                "shared/{group}.yaml does not list {name}"
            );
            blocks.extend(&shared.blocks);
            counters.extend(&shared.counters);
        }
        blocks.extend(&file.blocks);
        counters.extend(&file.counters);
        blocks.sort_by_key(|b| b.aql_block_id);
        counters.sort_by(|a, b| a.name.cmp(&b.name));
        let mut names = BTreeSet::new();
        for counter in &counters {
            assert!(
                names.insert(&counter.name),
                "{name}: counter {} is defined twice",
                counter.name
            );
            let basic =
                counter.block.is_some() && counter.event.is_some() && counter.expression.is_none();
            let derived =
                counter.block.is_none() && counter.event.is_none() && counter.expression.is_some();
            assert!(
                basic || derived,
                "{name}: counter {} needs block and event, or expression",
                counter.name
            );
        }
        let reference = match &file.reference_topology {
            Some(r) => format!(
                "Some(({:?}, &{:?}))",
                r.product,
                r.properties.iter().collect::<Vec<_>>()
            ),
            None => "None".into(),
        };
        let _ = writeln!(
            code,
            "    BuiltinArch {{ arch: {name:?}, reference: {reference}, blocks: &["
        );
        for block in blocks {
            let _ = writeln!(code, "        {},", block_code(block));
        }
        code.push_str("    ], counters: &[\n");
        for counter in counters {
            let _ = writeln!(code, "        {},", counter_code(counter));
        }
        code.push_str("    ] },\n");
    }
    code.push_str("];\n");
    let out = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("builtin.rs");
    fs::write(&out, code).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}
