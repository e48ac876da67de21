//! Event-queue throughput: a hold model (pop one, push one a random delay later) with a
//! standing population, the classic priority-queue benchmark for discrete-event engines.
//! The events are either a word or 160 bytes, the size of a simulator event that carries a
//! packet. A second model has the shape of a network: 40 links, each delivering in time
//! order after its own fixed delay, forward each popped event to the next link.
use airlink_engine::{Duration, EventQueue, Instant, RngStream};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn hold_with<E: Clone>(c: &mut Criterion, name: &str, event: impl Fn(usize) -> E) {
    let mut g = c.benchmark_group("event_queue_hold");
    for population in [64usize, 4096] {
        g.throughput(Throughput::Elements(100_000));
        g.bench_function(format!("{name}population_{population}"), |b| {
            b.iter(|| {
                let mut rng = RngStream::derive(1, "bench");
                let mut q = EventQueue::new();
                for i in 0..population {
                    q.push(
                        Instant::from_nanos(rng.below(1_000_000)),
                        0,
                        i as u32,
                        event(i),
                    );
                }
                for _ in 0..100_000 {
                    let (k, e) = q.pop().unwrap();
                    q.push(
                        k.time + Duration::from_nanos(rng.below(1_000_000)),
                        0,
                        k.source,
                        e,
                    );
                }
                q.len()
            })
        });
    }
    g.finish();
}

fn links(c: &mut Criterion) {
    const LINKS: u32 = 40;
    let mut g = c.benchmark_group("event_queue_links");
    g.throughput(Throughput::Elements(100_000));
    g.bench_function("event_160B_population_4096", |b| {
        let delay = |link: u32| Duration::from_nanos(1_000_000 + 37_000 * link as u64);
        b.iter(|| {
            let mut q = EventQueue::new();
            for i in 0..4096u32 {
                let link = i % LINKS;
                q.push(
                    Instant::from_nanos(i as u64 * 1_000),
                    0,
                    link,
                    [i as u64; 20],
                );
            }
            for _ in 0..100_000 {
                let (k, e) = q.pop().unwrap();
                let next = (k.source + 1) % LINKS;
                q.push(k.time + delay(next), 0, next, e);
            }
            q.len()
        })
    });
    g.finish();
}

fn hold(c: &mut Criterion) {
    hold_with(c, "", |i| i);
    hold_with(c, "event_160B_", |i| [i as u64; 20]);
}

criterion_group!(benches, hold, links);
criterion_main!(benches);
