//! A kind's fields, each stated once, in one table per kind: how a change to it is made (in
//! place, only by making the resource again, or never, because it names the resource), the
//! CloudTrail events that set it, and the Terraform provider's argument that carries it. What a
//! diff replaces a resource for, what attribution looks for in CloudTrail and what the Terraform
//! view forces new are all read from the table, so that no two of them can disagree.

use crate::address::ResourceKind;

/// How a change to a field reaches AWS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutability {
    /// A call changes it on the resource as it is.
    InPlace,
    /// AWS sets it only when the resource is made: changing it replaces the resource.
    CreateOnly,
    /// It names the resource (desired and live are matched by it), so it never differs; a
    /// provider plans a new resource for a new one.
    Identity,
}

/// One field of a kind's spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub name: &'static str,
    pub mutability: Mutability,
    /// The CloudTrail management events that set it; none when the kind's
    /// [`crate::describe::KindTrail::other_fields`] (or every event of the kind) says.
    pub events: &'static [&'static str],
    /// The Terraform provider's argument that carries it, when not its own name
    /// (`encryption_configuration` for ECR's `encryption_type`): said of the fields a change to
    /// which makes a new resource, which is what the Terraform view reads of it.
    pub terraform: Option<&'static str>,
}

impl Field {
    const fn new(name: &'static str, mutability: Mutability) -> Field {
        Field { name, mutability, events: &[], terraform: None }
    }

    pub const fn in_place(name: &'static str) -> Field {
        Field::new(name, Mutability::InPlace)
    }

    pub const fn create_only(name: &'static str) -> Field {
        Field::new(name, Mutability::CreateOnly)
    }

    pub const fn identity(name: &'static str) -> Field {
        Field::new(name, Mutability::Identity)
    }

    /// Set by these CloudTrail events.
    pub const fn set_by(self, events: &'static [&'static str]) -> Field {
        Field { events, ..self }
    }

    /// Carried by this argument of the Terraform provider's resource.
    pub const fn in_terraform(self, argument: &'static str) -> Field {
        Field { terraform: Some(argument), ..self }
    }

    /// The provider's argument that carries it.
    pub fn argument(&self) -> &'static str {
        self.terraform.unwrap_or(self.name)
    }
}

/// Every field of one kind's desired resources.
#[derive(Debug, Clone, Copy)]
pub struct Fields {
    pub kind: ResourceKind,
    pub fields: &'static [Field],
}

impl Fields {
    /// The row of the field `name`.
    pub fn get(&self, name: &str) -> Option<&'static Field> {
        self.fields.iter().find(|field| field.name == name)
    }

    /// The fields a change to which replaces the resource: what its diff replaces it for.
    pub fn create_only(&self) -> Vec<&'static str> {
        self.fields.iter().filter(|field| field.mutability == Mutability::CreateOnly).map(|field| field.name).collect()
    }

    /// The provider arguments a change to which Terraform plans as a new resource: those of the
    /// fields made only at create and of those that name it, and `more` (arguments the mapping
    /// sets from no field, as a path it always writes).
    pub fn forcing_new(&self, more: &[&'static str]) -> Vec<&'static str> {
        let mut arguments: Vec<&'static str> = self
            .fields
            .iter()
            .filter(|field| field.mutability != Mutability::InPlace)
            .map(Field::argument)
            .chain(more.iter().copied())
            .collect();
        arguments.sort_unstable();
        arguments.dedup();
        arguments
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIND: ResourceKind = crate::fake::kinds::ECR_REPOSITORY;
    const TABLE: Fields = Fields {
        kind: KIND,
        fields: &[
            Field::identity("name"),
            Field::in_place("scan_on_push").set_by(&["PutImageScanningConfiguration"]),
            Field::create_only("encryption_type")
                .set_by(&["CreateRepository"])
                .in_terraform("encryption_configuration"),
            Field::create_only("kms_key").in_terraform("encryption_configuration"),
        ],
    };

    #[test]
    fn what_replaces_what_terraform_forces_new_and_who_sets_a_field_come_from_its_row() {
        assert_eq!(TABLE.create_only(), ["encryption_type", "kms_key"]);
        assert_eq!(TABLE.forcing_new(&[]), ["encryption_configuration", "name"]);
        assert_eq!(TABLE.forcing_new(&["path"]), ["encryption_configuration", "name", "path"]);
        assert_eq!(TABLE.get("scan_on_push").map(|f| f.events), Some(&["PutImageScanningConfiguration"][..]));
        assert_eq!(TABLE.get("kms_key").map(Field::argument), Some("encryption_configuration"));
        assert!(TABLE.get("tags").is_none());
    }
}
