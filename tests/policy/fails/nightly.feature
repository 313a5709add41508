# What the nightly does by design and a stricter policy forbids: terraform-compliance fails on
# it, naming the resources (a gate that reads reconcile's plans is not an all-clear).
Feature: A stricter policy than the nightly's

  Scenario: No runner is privileged
    Given I have aws_codebuild_project defined
    Then it must contain environment
    And it must contain privileged_mode
    And its value must be false

  Scenario: Every repository scans on push
    Given I have aws_ecr_repository defined
    Then it must contain image_scanning_configuration
    And it must contain scan_on_push
    And its value must be true
