//! CodeBuild's way to GitHub: the account's GitHub source credential, or the CodeConnections
//! connection a project names. Without either CodeBuild refuses to make the
//! project and its webhook, so the plan says so (E103) and apply refuses before its first write.

use aws_sdk_codebuild as codebuild;
use reconcile_aws::failed;
use reconcile_core::plan::{DesiredResource, Finding, Severity};
use reconcile_core::{Address, ReconcileError};

use crate::project::{CONNECTION_KEY, ProjectSpec};
use crate::{CodebuildReconciler, NO_WAY_TO_GITHUB, NOT_FOUND};

impl CodebuildReconciler {
    /// E103 for each of the desired projects CodeBuild cannot reach GitHub for, remembered for
    /// apply's refusal. Read only: `ListSourceCredentials` once, and each named connection.
    pub(crate) async fn way_to_github(&self, desired: &[&DesiredResource]) -> Result<Vec<Finding>, ReconcileError> {
        let projects: Vec<(&DesiredResource, ProjectSpec)> = desired
            .iter()
            .filter(|r| r.address.kind == crate::PROJECT)
            .map(|r| Ok((*r, reconcile_core::spec::desired::<ProjectSpec>(r)?)))
            .collect::<Result<_, ReconcileError>>()?;
        let mut credential = None;
        let mut findings = Vec::new();
        for (resource, spec) in projects {
            let why = match spec.connection() {
                Some(connection) => self.unusable_connection(&resource.address, connection).await?,
                None => {
                    if credential.is_none() {
                        credential = Some(self.has_github_credential(&resource.address).await?);
                    }
                    (credential == Some(false)).then(|| {
                        let region = &self.account.region;
                        format!(
                            "CodeBuild has no way to reach GitHub in {region}: the account has no GitHub source \
                             credential there, and the project names no connection (`{CONNECTION_KEY}`), so CodeBuild \
                             refuses to create the project (\"No Access token found\") and its webhook; import one \
                             (`aws codebuild import-source-credentials --region {region} --server-type GITHUB \
                             --auth-type PERSONAL_ACCESS_TOKEN --token <token>`), or name a CodeConnections connection \
                             to GitHub in `{CONNECTION_KEY}` once it is AVAILABLE"
                        )
                    })
                }
            };
            let mut unreachable = self.unreachable.lock().expect("never poisoned");
            match why {
                Some(why) => {
                    unreachable.insert(resource.address.name.clone(), why.clone());
                    findings.push(Finding {
                        code: NO_WAY_TO_GITHUB.to_owned(),
                        severity: Severity::Error,
                        address: Some(resource.address.clone()),
                        message: why,
                        overridden_by: None,
                    });
                }
                None => {
                    unreachable.remove(&resource.address.name);
                }
            }
        }
        Ok(findings)
    }

    /// Whether the account has a GitHub source credential in the region.
    pub(crate) async fn has_github_credential(&self, address: &Address) -> Result<bool, ReconcileError> {
        let output = self
            .client
            .list_source_credentials()
            .send()
            .await
            .map_err(failed(Some(address), "list CodeBuild's source credentials"))?;
        Ok(output
            .source_credentials_infos()
            .iter()
            .any(|info| info.server_type().is_some_and(|t| *t == codebuild::types::ServerType::Github)))
    }

    /// Why the connection `arn` cannot carry the project to GitHub, if it cannot.
    pub(crate) async fn unusable_connection(
        &self,
        address: &Address,
        arn: &str,
    ) -> Result<Option<String>, ReconcileError> {
        let Some(connections) = &self.connections else {
            return Err(ReconcileError::new(Some(address), "read the connection", "no CodeConnections client"));
        };
        let response = connections.get_connection().connection_arn(arn).send().await;
        let connection = reconcile_aws::absent_if(response, &[NOT_FOUND])
            .map_err(failed(Some(address), "read the connection desired.toml names"))?;
        let status = connection.as_ref().and_then(|c| c.connection()).and_then(|c| c.connection_status());
        Ok(match status {
            None => Some(format!(
                "the connection `{arn}` desired.toml names (`{CONNECTION_KEY}`) does not exist in the account, so CodeBuild \
                 cannot reach GitHub through it; create it and complete it in the console, or name another"
            )),
            Some(status) if *status == aws_sdk_codeconnections::types::ConnectionStatus::Available => None,
            Some(status) => Some(format!(
                "the connection `{arn}` desired.toml names (`{CONNECTION_KEY}`) is {}, not AVAILABLE: a connection made by \
                 API waits for its handshake, completed once in the console (Developer Tools > Settings > \
                 Connections > Update pending connection); until then CodeBuild refuses the project and its webhook",
                status.as_str()
            )),
        })
    }
}
