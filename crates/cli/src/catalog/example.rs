//! A resource crate that exists only for the tests: a kind core does not know (`example_queue`),
//! its own section of desired.toml (`[example.queues.<name>]`), its CI access, what CloudTrail
//! records of it, and its reconciler (in memory). It is "Adding a kind" of
//! docs/architecture.md, done: nothing outside this file knows it, and the tests put it in the
//! list as one more line ([`EXTENDED`]), then run what goes over the list.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use reconcile_core::describe::{Access, Description, Index, KindTrail};
use reconcile_core::desired::{Claim, Read, Section};
use reconcile_core::plan::{Change, DesiredResource, Observed};
use reconcile_core::reconciler::{Applied, Observations, Progress};
use reconcile_core::{Account, Address, Desired, ReconcileError, Reconciler, ResourceKind};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toml::Spanned;

use super::{CRATES, Crate};

/// Its one kind, listed after every other in a plan.
pub const QUEUE: ResourceKind = ResourceKind::new("example_queue", 900);

reconcile_core::resource_kinds! {
    /// The kinds this crate owns.
    pub enum ExampleKind {
        Queue = QUEUE,
    }
}

/// `[example]`: the crate's own settings.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawExample {
    #[serde(default)]
    queues: BTreeMap<String, RawQueue>,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawQueue {
    /// Days a message is kept: 1 to 14, as SQS allows.
    #[schemars(with = "u32")]
    retention_days: Spanned<u32>,
}

/// What the crate keeps of its section: each queue's retention, in days.
type Retentions = BTreeMap<String, u32>;

fn read(section: &Section) -> Read {
    section.read(|locate, raw: RawExample, errors| {
        for (name, queue) in &raw.queues {
            if !(1..=14).contains(queue.retention_days.get_ref()) {
                errors.push(locate.error(
                    Some(queue.retention_days.span()),
                    &format!("example.queues.{name}.retention_days"),
                    "a queue keeps messages 1 to 14 days",
                ));
            }
        }
        raw.queues.into_iter().map(|(name, queue)| (name, queue.retention_days.into_inner())).collect::<Retentions>()
    })
}

fn desired(desired: &Desired) -> Vec<DesiredResource> {
    let Some(queues) = desired.section("example").and_then(Section::model::<Retentions>) else { return Vec::new() };
    queues
        .iter()
        .map(|(name, days)| {
            let mut attributes = Map::new();
            attributes.insert("retention_days".to_owned(), json!(days));
            DesiredResource::new(Address::new(QUEUE, name), name, attributes)
        })
        .collect()
}

fn statement(sid: &str, actions: &[&str], account: &Account) -> Vec<Value> {
    let arn = format!("arn:aws:sqs:{}:{}:*", account.region, account.id);
    vec![json!({ "Sid": sid, "Effect": "Allow", "Action": actions, "Resource": [arn] })]
}

pub const DESCRIPTION: Description = Description {
    name: "example",
    kinds: ExampleKind::KINDS,
    sections: &[Claim {
        name: "example",
        after: None,
        types: Section::types::<RawExample>,
        publishes: Claim::NOTHING,
        read,
        schema: || json!(schemars::schema_for!(RawExample)),
    }],
    desired: |desired_file, _, _| Ok(desired(desired_file)),
    access: Access {
        reads: |_, account| statement("TheExampleQueues", &["sqs:GetQueueAttributes"], account),
        writes: |_, account| {
            statement("WriteTheExampleQueues", &["sqs:CreateQueue", "sqs:SetQueueAttributes"], account)
        },
        ..Access::NONE
    },
    trail: &[KindTrail {
        kind: QUEUE,
        events: &["CreateQueue", "SetQueueAttributes", "DeleteQueue"],
        other_fields: None,
        removals: &["DeleteQueue"],
        findings: &[],
        global: false,
        index: Index::Absent,
        names: |name, parameters, _| parameters["queueName"] == name,
    }],
    fields: &[reconcile_core::fields::Fields {
        kind: QUEUE,
        fields: &[
            reconcile_core::fields::Field::in_place("retention_days").set_by(&["CreateQueue", "SetQueueAttributes"])
        ],
    }],
    terraform: &[reconcile_core::terraform::Mapping {
        kind: QUEUE,
        map: |_, name, fields| {
            let seconds = fields.get("retention_days").and_then(serde_json::Value::as_u64).map(|days| days * 86_400);
            vec![reconcile_core::terraform::ProviderResource::new(
                reconcile_core::terraform::Provider::Aws,
                "aws_sqs_queue",
                "queue",
                json!({ "name": name, "message_retention_seconds": seconds }),
            )]
        },
        unmapped: "",
    }],
    generate: reconcile_core::describe::generates_nothing,
    variables: reconcile_core::describe::derives_no_variables,
};

/// The queues it holds, in memory: what apply wrote.
#[derive(Default)]
pub struct Queues(Mutex<BTreeMap<Address, Map<String, Value>>>);

#[async_trait]
impl Reconciler for Queues {
    fn fields(&self) -> &'static [reconcile_core::fields::Fields] {
        DESCRIPTION.fields
    }

    fn kinds(&self) -> &'static [ResourceKind] {
        ExampleKind::KINDS
    }

    async fn observe(&self, desired: &[&DesiredResource]) -> Result<Observations, ReconcileError> {
        let held = self.0.lock().unwrap();
        let found = desired.iter().map(|resource| {
            let observed = held.get(&resource.address).cloned().map_or(Observed::Absent, Observed::Present);
            (resource.address.clone(), observed)
        });
        Ok(found.collect::<BTreeMap<_, _>>().into())
    }

    async fn apply(&self, change: &Change, _: &dyn Progress) -> Result<Applied, ReconcileError> {
        let ExampleKind::Queue = ExampleKind::of(&change.address)?;
        let mut held = self.0.lock().unwrap();
        match &change.after {
            Some(after) => held.insert(change.address.clone(), after.clone()),
            None => held.remove(&change.address),
        };
        Ok(Applied::Done)
    }
}

/// The list with the example crate: one line more.
pub const EXTENDED: [Crate; 6] = [
    CRATES[0],
    CRATES[1],
    CRATES[2],
    CRATES[3],
    CRATES[4],
    Crate { description: &DESCRIPTION, aws: Some(|_| Box::new(Queues::default())) },
];
