//! End-to-end tests of the `reconcile` binary against the local AWS emulator.
//!
//! One test binary for the whole workspace (build time matters more than file count). Each test
//! gets its own emulator account, so tests run in parallel and never see each other's resources.

mod account;
mod attribution;
mod ci;
mod codebuild;
mod conversation;
mod cost;
mod declare;
mod destroy;
mod docs;
mod ecr;
mod errors;
mod escalation;
mod faults;
mod generate;
mod github;
mod hostile;
mod input;
mod live;
mod marks;
mod ownership;
mod performance;
mod permissions;
mod policies;
mod public_plan;
mod pull_request;
mod put_back;
mod real_aws;
mod review;
mod round_trip;
mod s3_iam;
mod safety;
mod shipping;
mod support;
mod terraform_json;
mod tidy;
mod workflows;
