//! `reconcile import`'s edit: the declared resources that exist without this deployment's mark,
//! listed in desired.toml's top-level `import` (Terraform's `import` blocks), and those already
//! this deployment's taken off it, with everything else in the file as it was (`toml_edit`, as
//! `declare`'s edit). Pure: text in, text out.

use reconcile_core::Address;
use toml_edit::{Array, DocumentMut, Item, Value};

/// What `import` would do to desired.toml.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listing {
    /// Listed now.
    pub added: Vec<String>,
    /// Taken off: the import is done (the resource carries this deployment's mark), or it no
    /// longer names a resource that exists without it.
    pub removed: Vec<String>,
    /// desired.toml with the list as it should be (the same text when nothing changes).
    pub text: String,
}

/// The file's `import` list made of what it lists, without what `done` holds, and with `wanted`
/// (in address order) after it.
pub fn list(text: &str, wanted: &[Address], done: &[Address]) -> Result<Listing, String> {
    let mut document: DocumentMut = text.parse().map_err(|error| format!("does not parse: {error}"))?;
    let listed: Vec<String> = match document.get("import") {
        None => Vec::new(),
        Some(item) => item
            .as_array()
            .ok_or("`import` is not a list")?
            .iter()
            .map(|value| value.as_str().map(str::to_owned).ok_or("`import` holds a value that is not a string"))
            .collect::<Result<_, _>>()?,
    };
    let done: Vec<String> = done.iter().map(ToString::to_string).collect();
    let removed: Vec<String> = listed.iter().filter(|entry| done.contains(entry)).cloned().collect();
    let mut kept: Vec<String> = listed.iter().filter(|entry| !done.contains(entry)).cloned().collect();
    let mut wanted: Vec<String> = wanted.iter().map(ToString::to_string).collect();
    wanted.sort();
    let added: Vec<String> = wanted.into_iter().filter(|entry| !kept.contains(entry)).collect();
    if added.is_empty() && removed.is_empty() {
        return Ok(Listing { text: text.to_owned(), ..Listing::default() });
    }
    kept.extend(added.iter().cloned());
    if kept.is_empty() {
        document.remove("import");
    } else {
        let mut array = Array::new();
        for entry in &kept {
            let mut value = Value::from(entry.as_str());
            value.decor_mut().set_prefix("\n  ");
            array.push_formatted(value);
        }
        array.set_trailing("\n");
        array.set_trailing_comma(true);
        match document.get_mut("import") {
            Some(item) => *item = Item::Value(Value::Array(array)),
            None => {
                document.insert("import", Item::Value(Value::Array(array)));
                if let Some(mut key) = document.key_mut("import") {
                    key.leaf_decor_mut().set_prefix(
                        "\n# Resources that exist without this deployment's mark, taken over (imported) by the next\n\
                         # apply, as the plan shows them. `reconcile import` wrote this list; once applied, it takes\n\
                         # the imported ones off again.\n",
                    );
                }
            }
        }
    }
    Ok(Listing { added, removed, text: document.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reconcile_core::ResourceKind;

    const REPOSITORY: ResourceKind = ResourceKind::new("ecr_repository", 300);
    const BUCKET: ResourceKind = ResourceKind::new("s3_bucket", 200);

    fn repository(name: &str) -> Address {
        Address::new(REPOSITORY, name)
    }

    const FILE: &str = "# the account\nregion = \"us-east-1\" # here\ndeployment = \"rocm-bake\"\n\n[ecr.repositories]\npytorch = {}\nvllm = {}\n";

    #[test]
    fn the_list_is_written_after_the_top_level_keys_one_address_a_line_and_the_rest_kept() {
        let listing =
            list(FILE, &[repository("vllm"), Address::new(BUCKET, "cache"), repository("pytorch")], &[]).unwrap();
        assert_eq!(listing.added, ["ecr_repository.pytorch", "ecr_repository.vllm", "s3_bucket.cache"]);
        assert!(listing.text.starts_with("# the account\nregion = \"us-east-1\" # here\ndeployment = \"rocm-bake\"\n"));
        assert!(
            listing.text.contains(
                "by the next\n# apply, as the plan shows them. `reconcile import` wrote this list; once applied, it takes\n# the imported ones off again.\nimport = [\n  \"ecr_repository.pytorch\",\n  \"ecr_repository.vllm\",\n  \"s3_bucket.cache\",\n]\n"
            ),
            "{}",
            listing.text
        );
        assert!(listing.text.ends_with("\n[ecr.repositories]\npytorch = {}\nvllm = {}\n"), "{}", listing.text);
        let desired: toml::Table = toml::from_str(&listing.text).unwrap();
        assert_eq!(desired["import"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn what_is_listed_stays_what_is_done_goes_and_nothing_to_do_is_the_same_text() {
        let once = list(FILE, &[repository("vllm")], &[]).unwrap().text;
        let twice = list(&once, &[repository("pytorch"), repository("vllm")], &[]).unwrap();
        assert_eq!(twice.added, ["ecr_repository.pytorch"]);
        assert!(
            twice.text.contains("import = [\n  \"ecr_repository.vllm\",\n  \"ecr_repository.pytorch\",\n]"),
            "{}",
            twice.text
        );
        let same = list(&twice.text, &[repository("vllm")], &[]).unwrap();
        assert_eq!((same.added.len(), same.removed.len(), same.text == twice.text), (0, 0, true));
        let done = list(&twice.text, &[], &[repository("vllm")]).unwrap();
        assert_eq!(done.removed, ["ecr_repository.vllm"]);
        assert!(done.text.contains("import = [\n  \"ecr_repository.pytorch\",\n]"), "{}", done.text);
        // All done: the key goes, its comment with it.
        let all = list(&done.text, &[], &[repository("pytorch")]).unwrap();
        assert!(!all.text.contains("import"), "{}", all.text);
    }

    #[test]
    fn a_list_that_is_not_one_of_addresses_is_refused() {
        assert!(list("import = 3\n", &[], &[]).unwrap_err().contains("not a list"));
        assert!(list("import = [3]\n", &[], &[]).unwrap_err().contains("not a string"));
        assert!(list("import = [\n", &[], &[]).unwrap_err().contains("does not parse"));
    }
}
