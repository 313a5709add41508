//! The one conversion between a resource crate's typed spec and the canonical map the plan
//! carries.
//!
//! Each resource crate declares its desired and observed fields as serde structs; the diff,
//! the renderers and the fingerprints see only the canonical map those structs serialize to
//! (maps compare regardless of key order, and every text form sorts its keys, so field order
//! in a struct never shows). Apply reads a
//! change back into the typed spec, and a field that is missing or of the wrong type is an
//! error naming the address and the field: never a default sent to AWS.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::plan::{Change, DesiredResource};
use crate::reconciler::{ErrorKind, ReconcileError};

/// The canonical map of a typed spec.
pub fn attributes<T: Serialize>(spec: &T) -> Map<String, Value> {
    match serde_json::to_value(spec) {
        Ok(Value::Object(map)) => map,
        // Specs are structs of plain data: serializing one cannot fail or be anything else.
        Ok(other) => unreachable!("a spec serialized to {other}, not an object"),
        Err(error) => unreachable!("a spec failed to serialize: {error}"),
    }
}

/// A desired resource's fields as the typed spec `T`, for observe to know what to look for.
pub fn desired<T: DeserializeOwned>(resource: &DesiredResource) -> Result<T, ReconcileError> {
    serde_json::from_value(Value::Object(resource.attributes.clone())).map_err(|error| {
        ReconcileError::new(Some(&resource.address), "read the desired fields", error.to_string())
            .with_kind(ErrorKind::InvalidChange)
    })
}

/// The change's desired fields as the typed spec `T`; every create and update has them.
pub fn after<T: DeserializeOwned>(change: &Change) -> Result<T, ReconcileError> {
    let fields = change.after.as_ref().ok_or_else(|| {
        ReconcileError::new(Some(&change.address), change.action.as_str(), "the change has no desired fields")
            .with_kind(ErrorKind::InvalidChange)
    })?;
    typed(change, "desired", fields)
}

/// The change's observed fields as the typed spec `T`, when it has them (not for a create).
pub fn before<T: DeserializeOwned>(change: &Change) -> Result<Option<T>, ReconcileError> {
    change.before.as_ref().map(|fields| typed(change, "observed", fields)).transpose()
}

fn typed<T: DeserializeOwned>(change: &Change, which: &str, fields: &Map<String, Value>) -> Result<T, ReconcileError> {
    let value = Value::Object(fields.clone());
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let reason = if path == "." { error.inner().to_string() } else { format!("`{path}`: {}", error.inner()) };
        ReconcileError::new(Some(&change.address), format!("read the change's {which} fields"), reason)
            .with_kind(ErrorKind::InvalidChange)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::Address;
    use crate::plan::Action;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    struct Spec {
        name: String,
        count: u32,
    }

    fn change(after: Value) -> Change {
        Change {
            address: Address::new(crate::fake::kinds::ECR_REPOSITORY, "pytorch"),
            action: Action::Update,
            before: None,
            after: after.as_object().cloned(),
            depends_on: vec![],
        }
    }

    #[test]
    fn a_spec_round_trips_through_its_canonical_map() {
        let spec = Spec { name: "a".into(), count: 3 };
        let change = change(Value::Object(attributes(&spec)));
        assert_eq!(after::<Spec>(&change).unwrap(), spec);
        assert_eq!(before::<Spec>(&change).unwrap(), None);
        let update = Change { before: Some(attributes(&Spec { name: "b".into(), count: 1 })), ..change };
        assert_eq!(before::<Spec>(&update).unwrap(), Some(Spec { name: "b".into(), count: 1 }));
    }

    #[test]
    fn a_missing_or_mistyped_field_names_the_address_and_the_field() {
        let missing = after::<Spec>(&change(json!({ "name": "a" }))).unwrap_err();
        assert_eq!(
            missing.to_string(),
            "ecr_repository.pytorch: failed to read the change's desired fields: missing field `count`"
        );
        assert_eq!(missing.kind, ErrorKind::InvalidChange);
        let mistyped = after::<Spec>(&change(json!({ "name": "a", "count": "3" }))).unwrap_err();
        assert!(mistyped.to_string().contains("`count`: invalid type: string \"3\""), "{mistyped}");
    }
}
