//! Checks on the repository itself: module docs, and that shipped examples stay valid.

use std::path::{Path, PathBuf};

use reconcile_test_support::{emulator, workspace_root};

use crate::support::reconcile;

fn files_under(dir: &Path, extension: &str, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, extension, found);
        } else if path.extension().is_some_and(|e| e == extension) {
            found.push(path);
        }
    }
}

#[test]
fn every_rust_file_starts_with_a_module_doc() {
    let mut files = Vec::new();
    files_under(&workspace_root().join("crates"), "rs", &mut files);
    assert!(files.len() > 10);
    let undocumented: Vec<_> =
        files.iter().filter(|path| !std::fs::read_to_string(path).unwrap().starts_with("//!")).collect();
    assert!(undocumented.is_empty(), "files without a `//!` module doc: {undocumented:?}");
}

#[tokio::test]
async fn every_example_desired_file_validates() {
    let account = emulator().new_account().await;
    let mut files = Vec::new();
    files_under(&workspace_root().join("examples"), "toml", &mut files);
    assert!(!files.is_empty());
    for file in files {
        let run = reconcile(&account, &file, &["validate"]);
        assert_eq!(run.code, 0, "{}: {}", file.display(), run.stderr);
    }
}
