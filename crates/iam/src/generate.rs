//! `import --generate` for IAM: the service roles of the account that desired.toml does not
//! declare ([`IamReconciler::inventory_of`]: roles only AWS services assume, which is what a
//! project runs as), written as `[iam.roles.<key>]` ([`generate`]). Their inline policy is never
//! written: reconcile derives it from what runs as the role, and a plan that finds the live one
//! grants more says so as a change to review.

use std::collections::BTreeSet;

use reconcile_aws::{failed, visible_tags};
use reconcile_core::desired::{Desired, Reference, Topic};
use reconcile_core::generate::{Entry, Found, Generated, key_for};
use reconcile_core::mark::MARK_KEY;
use reconcile_core::plan::DesiredResource;
use reconcile_core::{Account, Address, ReconcileError};
use serde_json::{Map, Value, json};

use crate::{IamReconciler, ROLE, ROLE_POLICY, policy};

impl IamReconciler {
    /// The roles `desired` does not declare that only AWS services assume (not the ones AWS
    /// links to a service), each with its description, session length, tags without the mark,
    /// the services it trusts and its inline policies' names.
    pub(crate) async fn inventory_of(&self, desired: &[&DesiredResource]) -> Result<Vec<Found>, ReconcileError> {
        let declared: BTreeSet<&str> = desired
            .iter()
            .filter(|r| matches!(r.address.kind, crate::ROLE | crate::CI_ROLE))
            .map(|r| r.remote_name.as_str())
            .collect();
        let mut pages = self.client.list_roles().into_paginator().send();
        let mut read = reconcile_aws::Pages::default();
        let mut candidates = Vec::new();
        while let Some(page) = self.parallelism.send_once(|| pages.next()).await {
            let page = page.map_err(failed(None, "list roles"))?;
            read.page(page.marker(), None, "list roles")?;
            for role in page.roles() {
                if declared.contains(role.role_name()) || role.path().starts_with("/aws-service-role/") {
                    continue;
                }
                let trust = role
                    .assume_role_policy_document()
                    .map_or(Value::Null, |text| policy::canonical_text(text, &self.account.partition));
                if let Some(services) = services_only(&trust) {
                    candidates.push((role.role_name().to_owned(), services));
                }
            }
        }
        let reads: Vec<_> = candidates.iter().map(|(name, services)| self.read_role(name, services)).collect();
        futures::future::join_all(reads).await.into_iter().collect()
    }

    async fn read_role(&self, name: &str, services: &[String]) -> Result<Found, ReconcileError> {
        let address = Address::new(ROLE, name);
        let policy_address = Address::new(ROLE_POLICY, name);
        let (role, names) = futures::join!(
            self.parallelism.send(|| self.client.get_role().role_name(name).send()),
            self.inline_policy_names(&policy_address, name)
        );
        let role = role.map_err(failed(Some(&address), "read role"))?;
        let role =
            role.role().ok_or_else(|| ReconcileError::new(Some(&address), "read role", "IAM answered no role"))?;
        let mut tags = visible_tags(role.tags().iter().map(|t| (t.key(), t.value())));
        let deployment = tags.remove(MARK_KEY);
        let mut live = Map::new();
        live.insert("description".into(), json!(role.description().unwrap_or_default()));
        live.insert("max_session_duration".into(), json!(role.max_session_duration().unwrap_or(3600)));
        live.insert("tags".into(), json!(tags));
        live.insert("trusted_services".into(), json!(services));
        live.insert("policy_names".into(), json!(names?));
        Ok(Found { kind: ROLE, name: name.to_owned(), deployment, by_default: false, needs: Vec::new(), live })
    }
}

/// The services a trust policy (canonical) lets assume the role, when that is all it does:
/// every statement allows `sts:AssumeRole` to services, with no condition.
fn services_only(trust: &Value) -> Option<Vec<String>> {
    let statements = trust.get("Statement")?.as_array()?;
    let mut services = BTreeSet::new();
    for statement in statements {
        let object = statement.as_object()?;
        if object.keys().any(|key| !["Sid", "Effect", "Action", "Principal"].contains(&key.as_str())) {
            return None;
        }
        let strings = |value: &Value| -> Vec<String> {
            match value {
                Value::String(one) => vec![one.clone()],
                Value::Array(many) => many.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
                _ => Vec::new(),
            }
        };
        let allows = object.get("Effect").and_then(Value::as_str).is_some_and(|e| e.eq_ignore_ascii_case("allow"));
        let assumes = strings(object.get("Action")?).iter().all(|a| a.eq_ignore_ascii_case("sts:AssumeRole"));
        let principal = object.get("Principal")?.as_object()?;
        if !allows || !assumes || principal.keys().any(|key| key != "Service") {
            return None;
        }
        services.extend(strings(principal.get("Service")?));
    }
    (!services.is_empty()).then(|| services.into_iter().collect())
}

/// desired.toml's lines for the roles in `found`, each published as a role reference so a
/// project written after it names it by its key.
pub fn generate(found: &[&Found], desired: &Desired, account: &Account, _references: &[Reference]) -> Generated {
    let mut generated = Generated::default();
    let mut taken: Vec<String> = desired.referred(Topic::Role).map(|r| r.key.clone()).collect();
    for found in found {
        let live = &found.live;
        let key = key_for(&found.name, desired, &account.id, "role", &taken);
        taken.push(key.clone());
        let table = ["iam", "roles", key.as_str()];
        generated.push(&found.name, Entry::new(&table, "name", json!(found.name)));
        if let Some(description) = live.get("description").and_then(Value::as_str).filter(|d| !d.is_empty()) {
            generated.push(&found.name, Entry::new(&table, "description", json!(description)));
        }
        let services = live.get("trusted_services").cloned().unwrap_or(Value::Array(Vec::new()));
        generated.push(&found.name, Entry::new(&table, "trusted_services", services));
        if let Some(seconds) = live.get("max_session_duration").and_then(Value::as_u64).filter(|s| *s != 3600) {
            generated.push(&found.name, Entry::new(&table, "max_session_duration", json!(seconds)));
        }
        let names: Vec<&str> = live
            .get("policy_names")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match names.as_slice() {
            [one] => generated.push(&found.name, Entry::new(&table, "policy_name", json!(one))),
            [] => {}
            many => generated.notes.push(format!(
                "role `{}` has {} inline policies ({}); reconcile keeps one, derived: declare `policy_name` as the \
                 one to keep, and the plan deletes the others",
                found.name,
                many.len(),
                many.join(", ")
            )),
        }
        if let Some(tags) = live.get("tags").and_then(Value::as_object).filter(|tags| !tags.is_empty()) {
            generated.push(&found.name, Entry::new(&table, "tags", Value::Object(tags.clone())));
        }
        generated.derived.extend([Address::new(ROLE_POLICY, &key), Address::new(crate::ROLE_BOUNDARY, &key)]);
        generated.references.push(
            Reference::new(Topic::Role, key.clone(), found.name.clone())
                .at(Address::new(ROLE, &key))
                .at(Address::new(ROLE_POLICY, &key)),
        );
    }
    generated
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_trust_of_services_alone_makes_a_service_role() {
        let trust = |statement: Value| json!({"Version": "2012-10-17", "Statement": [statement]});
        let service = json!({"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": ["codebuild.amazonaws.com"]}});
        assert_eq!(services_only(&trust(service)), Some(vec!["codebuild.amazonaws.com".to_owned()]));
        let federated = json!({"Effect": "Allow", "Action": "sts:AssumeRoleWithWebIdentity", "Principal": {"Federated": "arn:aws:iam::1:oidc-provider/x"}});
        assert_eq!(services_only(&trust(federated)), None);
        let conditioned = json!({"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": "codebuild.amazonaws.com"}, "Condition": {"StringEquals": {"aws:SourceAccount": "1"}}});
        assert_eq!(services_only(&trust(conditioned)), None);
    }
}
