//! Producing with order and retries, over either broker: [`OrderedSender`] hands records to the
//! producer in the order given; [`deliver`] sends one until the broker acknowledges it.

use std::time::Duration;

use super::{BrokerError, BrokerErrorKind, Delivery, Outgoing, Producer};

/// Hands records to the producer in the order they were given, from a task of its own: the
/// idempotent producer keeps that order on the broker, and the caller never waits (not even
/// while the producer's local queue is full, when the task sleeps and tries again).
#[derive(Clone)]
pub struct OrderedSender {
    queue: tokio::sync::mpsc::UnboundedSender<(Outgoing, Enqueued)>,
}

/// The answer of [`OrderedSender::send`]: the delivery to wait for, or why there is none.
type Enqueued = tokio::sync::oneshot::Sender<Result<Delivery, BrokerError>>;

/// A record handed to an [`OrderedSender`]; [`Ordered::confirm`] waits for its delivery.
pub struct Ordered {
    outgoing: Outgoing,
    enqueued: tokio::sync::oneshot::Receiver<Result<Delivery, BrokerError>>,
}

impl OrderedSender {
    pub fn spawn(producer: Producer) -> Self {
        let (queue, mut records) = tokio::sync::mpsc::unbounded_channel::<(Outgoing, Enqueued)>();
        tokio::spawn(async move {
            while let Some((outgoing, answer)) = records.recv().await {
                let enqueued = enqueue_when_room(&producer, &outgoing, ORDERED_PAUSE).await;
                // The text may have been dropped meanwhile (revoked, shutdown): nobody waits.
                let _ = answer.send(enqueued);
            }
        });
        Self { queue }
    }

    /// Queue `outgoing` behind every record given before it.
    pub fn send(&self, outgoing: Outgoing) -> Ordered {
        let (answer, enqueued) = tokio::sync::oneshot::channel();
        // The task ends only when every sender is gone.
        let _ = self.queue.send((outgoing.clone(), answer));
        Ordered { outgoing, enqueued }
    }
}

/// How long the ordered sender's task waits for room in a full local queue: short, as every
/// learn record waits behind it.
const ORDERED_PAUSE: Duration = Duration::from_millis(10);
/// How long [`deliver`] waits for room (what librdkafka's own blocking send waits): many
/// delivery tasks may wait at once.
const DELIVER_PAUSE: Duration = Duration::from_millis(100);

/// Hand `outgoing` to the producer, waiting `pause` at a time while its local queue is full.
async fn enqueue_when_room(
    producer: &Producer,
    outgoing: &Outgoing,
    pause: Duration,
) -> Result<Delivery, BrokerError> {
    loop {
        match producer.enqueue(outgoing) {
            Err(error) if error.kind() == BrokerErrorKind::QueueFull => {
                tokio::time::sleep(pause).await;
            }
            enqueued => return enqueued,
        }
    }
}

impl Ordered {
    /// Wait for the record's delivery; if it failed, send it again with [`deliver`] (order is
    /// no longer guaranteed then: a retry after a failure, as librdkafka's own).
    pub async fn confirm(self, producer: &Producer) -> Result<(), BrokerError> {
        self.confirm_after(None, producer).await
    }

    /// [`Ordered::confirm`], a retry waiting until `previous` (the record handed over just
    /// before, confirmed or given up) is settled: records that failed together (a broker away
    /// longer than librdkafka's delivery timeout) are sent again in their order, not racing.
    pub async fn confirm_after(
        self,
        previous: Option<tokio::sync::oneshot::Receiver<()>>,
        producer: &Producer,
    ) -> Result<(), BrokerError> {
        if let Ok(Ok(delivery)) = self.enqueued.await {
            if delivery.acknowledged().await.is_ok() {
                return Ok(());
            }
        }
        if let Some(previous) = previous {
            // Its sender is dropped when settled either way.
            let _ = previous.await;
        }
        tracing::warn!(topic = %self.outgoing.topic, "ordered send failed; sending again");
        deliver(producer, &self.outgoing).await
    }
}

/// How often a record the broker refused as too large is sent again before it counts as too
/// large: the broker refuses a whole batch, and librdkafka does not split one, so a small
/// record batched with a large one is refused with it (only when a topic takes less than the
/// producer's `message.max.bytes`; docs/guide/bounds.md).
const TOO_LARGE_TRIES: u32 = 4;

/// Send until the broker acknowledges. librdkafka already retries inside its delivery timeout;
/// past that we back off and send again (a duplicate at worst, never a loss); the caller bounds
/// the whole thing with its shutdown deadline. Only a record the broker can never take comes
/// back as an error ([`BrokerErrorKind::TooLarge`]): at once when the producer refuses it
/// (larger than its own `message.max.bytes`); when the broker does, after
/// [`TOO_LARGE_TRIES`] sends at random moments (alone, it is taken if it fits).
pub async fn deliver(producer: &Producer, outgoing: &Outgoing) -> Result<(), BrokerError> {
    let mut backoff = Duration::from_millis(100);
    let mut refused_for_size = 0;
    loop {
        let sent = match enqueue_when_room(producer, outgoing, DELIVER_PAUSE).await {
            Ok(delivery) => delivery.acknowledged().await,
            // The producer's own refusal: the record alone is over its limit.
            Err(error) if error.kind() == BrokerErrorKind::TooLarge => return Err(error),
            Err(error) => Err(error),
        };
        match sent {
            Ok(()) => return Ok(()),
            Err(error) if error.kind() == BrokerErrorKind::TooLarge => {
                refused_for_size += 1;
                if refused_for_size >= TOO_LARGE_TRIES {
                    return Err(error);
                }
                tracing::debug!(topic = %outgoing.topic, %error, "refused as too large; sending alone");
                tokio::time::sleep(apart()).await;
            }
            Err(error) => {
                tracing::warn!(topic = %outgoing.topic, %error, "delivery failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(10));
            }
        }
    }
}

/// A random pause of 20–500 ms: records refused in one batch are sent again at different
/// moments, each in a batch of its own (the producer lingers 5 ms).
fn apart() -> Duration {
    use rand::Rng;
    Duration::from_millis(rand::rng().random_range(20..=500))
}
