use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use super::*;

fn counted() -> (Arc<RequestCounter>, Arc<dyn ObjectStore>) {
    let counter = RequestCounter::new();
    let store = CountingStore::wrap(Arc::new(InMemory::new()), &counter);
    (counter, store)
}

#[tokio::test]
async fn every_object_request_is_counted_by_kind() {
    let (counter, store) = counted();
    let key = Path::from("q/s1/t0/a0");
    store
        .put(&key, PutPayload::from(vec![7u8; 3 * 1024 * 1024]))
        .await
        .unwrap();
    store.get(&key).await.unwrap().bytes().await.unwrap();
    store.get_range(&key, 0..10).await.unwrap();
    store.head(&key).await.unwrap();
    assert!(store.head(&Path::from("q/stop")).await.is_err());
    // Two ranges 10 bytes apart are one GET; one 2 MiB further on is another.
    let got = store
        .get_ranges(&key, &[0..10, 20..30, 2_200_000..2_200_010])
        .await
        .unwrap();
    assert_eq!(
        got.iter().map(|b| b.len()).collect::<Vec<_>>(),
        [10, 10, 10]
    );
    assert_eq!(&got[1][..], &[7u8; 10]);
    store.copy(&key, &Path::from("q/copy")).await.unwrap();
    let c = counter.snapshot();
    assert_eq!((c.put, c.get, c.head), (2, 2 + 2, 2), "{c:?}");
    assert_eq!((c.list, c.delete, c.sqs()), (0, 0, 0));
}

#[tokio::test]
async fn multipart_parts_and_completion_are_puts() {
    let (counter, store) = counted();
    let mut upload = store.put_multipart(&Path::from("big")).await.unwrap();
    upload
        .put_part(PutPayload::from_static(b"a"))
        .await
        .unwrap();
    upload
        .put_part(PutPayload::from_static(b"b"))
        .await
        .unwrap();
    upload.complete().await.unwrap();
    let mut aborted = store.put_multipart(&Path::from("gone")).await.unwrap();
    aborted.abort().await.unwrap();
    let c = counter.snapshot();
    assert_eq!((c.put, c.delete), (1 + 2 + 1 + 1, 1), "{c:?}");
}

#[tokio::test]
async fn listing_counts_a_request_per_thousand_keys_and_deletes_per_key() {
    let (counter, store) = counted();
    let store_of = |n: usize| async move {
        let inner = Arc::new(InMemory::new());
        for i in 0..n {
            inner
                .put(
                    &Path::from(format!("p/{i:05}")),
                    PutPayload::from_static(b"x"),
                )
                .await
                .unwrap();
        }
        let counter = RequestCounter::new();
        (CountingStore::wrap(inner, &counter), counter)
    };
    for (n, pages) in [(0, 1), (1, 1), (1000, 1), (1001, 2), (2500, 3)] {
        let (s, c) = store_of(n).await;
        let listed: Vec<_> = s.list(Some(&Path::from("p"))).try_collect().await.unwrap();
        assert_eq!(listed.len(), n);
        assert_eq!(c.snapshot().list, pages, "{n} keys");
        let locations = futures::stream::iter(listed.into_iter().map(|m| Ok(m.location))).boxed();
        let deleted: Vec<_> = s.delete_stream(locations).try_collect().await.unwrap();
        assert_eq!(deleted.len(), n);
        assert_eq!(c.snapshot().delete, n as u64);
    }
    store.list_with_delimiter(None).await.unwrap();
    assert_eq!(counter.snapshot().list, 1);
}

#[test]
fn counts_add_up_and_tallies_forget_what_they_hand_over() {
    let a = RequestCounts {
        get: 1,
        sqs_send: 2,
        invoke: 3,
        ..Default::default()
    };
    let b = RequestCounts {
        get: 10,
        head: 1,
        sqs_receive: 1,
        invoke_throttled: 1,
        ..Default::default()
    };
    let sum: RequestCounts = [a, b].into_iter().sum();
    assert_eq!(
        (sum.get, sum.head, sum.sqs(), sum.invocations()),
        (11, 1, 3, 4)
    );
    assert_eq!(sum.objects(), 12);

    let counter = RequestCounter::new();
    counter.add(&sum);
    counter.count(Request::Put, 2);
    assert_eq!(
        counter.snapshot(),
        sum + RequestCounts {
            put: 2,
            ..Default::default()
        }
    );

    let tally = RequestTally::default();
    tally.count("q1", Request::SqsCreateQueue, 1);
    tally.count("q1", Request::SqsReceive, 4);
    tally.count("q2", Request::Invoke, 1);
    assert_eq!(tally.len(), 2);
    let q1 = tally.take("q1");
    assert_eq!((q1.sqs_create_queue, q1.sqs_receive), (1, 4));
    assert!(tally.take("q1").is_empty(), "taken once");
    assert_eq!(tally.len(), 1);
}

#[test]
fn sqs_requests_of_a_receive() {
    assert_eq!(sqs_receive_requests(0), (1, 0), "an empty long poll");
    assert_eq!(sqs_receive_requests(1), (1, 1));
    assert_eq!(sqs_receive_requests(10), (1, 1));
    assert_eq!(sqs_receive_requests(11), (2, 2));
    assert_eq!(sqs_receive_requests(400), (40, 40));
}

#[test]
fn reports_without_counts_read_as_zero() {
    let c: RequestCounts = serde_json::from_str(r#"{"get": 4}"#).unwrap();
    assert_eq!(c.get, 4);
    assert_eq!(c.put + c.sqs(), 0);
}
