# What the nightly's account holds to: terraform-compliance passes on every plan of it.
Feature: The nightly's account as desired.toml declares it

  Scenario: The compiler cache is never public
    Given I have aws_s3_bucket_public_access_block defined
    Then it must contain block_public_policy
    And its value must be true

  Scenario: Every repository is encrypted at rest
    Given I have aws_ecr_repository defined
    Then it must contain encryption_configuration
    And it must contain encryption_type
    And its value must match the "^(AES256|KMS|KMS_DSSE)$" regex

  Scenario: The runner logs to CloudWatch
    Given I have aws_codebuild_project defined
    Then it must contain logs_config
    And it must contain cloudwatch_logs

  Scenario: Every role says who may assume it
    Given I have aws_iam_role defined
    Then it must contain assume_role_policy
