//! What the bucket stores, day by day, for `reconcile cost`: S3's daily `BucketSizeBytes`
//! metric in CloudWatch, one per storage type (S3 publishes it once a day, for the day before,
//! https://docs.aws.amazon.com/AmazonS3/latest/userguide/metrics-dimensions.html). Read only.

use std::collections::BTreeMap;

use aws_sdk_cloudwatch as cloudwatch;
use aws_sdk_cloudwatch::types::{Dimension, DimensionFilter, Statistic};
use aws_smithy_types::DateTime;
use reconcile_aws::failed;
use reconcile_core::{Address, ReconcileError};

const NAMESPACE: &str = "AWS/S3";
const METRIC: &str = "BucketSizeBytes";

/// The largest size believed: an exbibyte.
const MAX_BYTES: f64 = (1u64 << 60) as f64;
const DAY: i64 = 86_400;

/// Bytes stored, by storage type (`StandardStorage`, `StandardIAStorage`, ...), then by day
/// (seconds since the epoch at 00:00 UTC), for the days from `from` up to `to`.
pub type DailyBytes = BTreeMap<String, BTreeMap<i64, u64>>;

/// The bucket's daily stored bytes between `from` and `to` (seconds since the epoch): one
/// `ListMetrics` for the storage types it has, then one `GetMetricStatistics` per type.
pub async fn daily_bytes(
    client: &cloudwatch::Client,
    bucket: &str,
    from: i64,
    to: i64,
) -> Result<DailyBytes, ReconcileError> {
    let address = Address::new(crate::BUCKET, bucket);
    let listed = client
        .list_metrics()
        .namespace(NAMESPACE)
        .metric_name(METRIC)
        .dimensions(DimensionFilter::builder().name("BucketName").value(bucket).build())
        .send()
        .await
        .map_err(failed(Some(&address), "list the bucket's storage metrics"))?;
    let mut storage_types: Vec<String> = listed
        .metrics()
        .iter()
        .flat_map(|metric| metric.dimensions())
        .filter(|d| d.name() == Some("StorageType"))
        .filter_map(|d| d.value().map(str::to_owned))
        .collect();
    storage_types.sort();
    storage_types.dedup();
    let dimension = |name: &str, value: &str| Dimension::builder().name(name).value(value).build();
    let mut days = DailyBytes::new();
    for storage in storage_types {
        let answer = client
            .get_metric_statistics()
            .namespace(NAMESPACE)
            .metric_name(METRIC)
            .dimensions(dimension("BucketName", bucket))
            .dimensions(dimension("StorageType", &storage))
            .start_time(DateTime::from_secs(from))
            .end_time(DateTime::from_secs(to))
            .period(DAY as i32)
            .statistics(Statistic::Average)
            .send()
            .await
            .map_err(failed(Some(&address), "read the bucket's daily size"))?;
        let by_day = days.entry(storage).or_default();
        for point in answer.datapoints() {
            let (Some(at), Some(bytes)) = (point.timestamp(), point.average()) else { continue };
            // A size no bucket has (not a number, negative, past an exbibyte) is a fault, not a
            // day's figure: left out, as a day S3 published nothing for.
            if !(0.0..=MAX_BYTES).contains(&bytes) {
                continue;
            }
            let day = at.secs().div_euclid(DAY) * DAY;
            by_day.insert(day, bytes.round() as u64);
        }
    }
    Ok(days)
}
