// Frames to every connected page without ever waiting for one: each page has a slot that holds
// only the newest frame not yet sent. A slow page skips frames; a closed one is forgotten when its
// connection ends. Publishing takes a lock per page for the time of a pointer swap; the training
// thread never publishes at all (the view model's snapshots reach the main actor first).
// A run's end is a last frame: each slot takes it and then ends, so that each page's stream writes
// it and closes, and the server can wait for that before the process exits.
import Synchronization

/// Hands each frame to every subscriber, keeping at most one unsent frame per subscriber.
public final class FrameBroadcaster: Sendable {
    private struct Clients {
        var slots: [Int: FrameSlot] = [:]
        var nextID = 0
        var latest: [UInt8]?
        /// Whether `latest` is the last frame (``finish(with:)``).
        var finished = false
    }

    private let clients = Mutex(Clients())

    public init() {}

    /// How many pages are connected.
    public var subscriberCount: Int { clients.withLock { $0.slots.count } }

    /// Frames dropped so far because a page had not taken the previous one.
    public var droppedFrames: Int { clients.withLock { $0.slots.values.reduce(0) { $0 + $1.dropped } } }

    /// Sends `frame` (one Server-Sent Event's bytes) to every subscriber, replacing any frame it has not taken.
    /// Nothing once the last frame is out (``finish(with:)``).
    public func publish(_ frame: [UInt8]) {
        let slots = clients.withLock { clients -> [FrameSlot] in
            guard !clients.finished else { return [] }
            clients.latest = frame
            return Array(clients.slots.values)
        }
        for slot in slots { slot.offer(frame) }
    }

    /// Sends `frame` to every subscriber as its last: each takes it in place of any frame it has
    /// not taken, then its subscription ends. A subscriber that comes later gets it alone.
    /// Subscribers stay counted until their connection lets go, which it does once it has
    /// written the frame (or found the page gone): ``subscriberCount`` falling to 0 says no page
    /// is still waiting for it.
    public func finish(with frame: [UInt8]) {
        let slots = clients.withLock { clients in
            (clients.latest, clients.finished) = (frame, true)
            return Array(clients.slots.values)
        }
        for slot in slots {
            slot.offer(frame)
            slot.close()
        }
    }

    /// A new subscriber, handed the latest frame at once (after the last frame: that frame, then the end).
    public func subscribe() -> FrameSubscription {
        let slot = FrameSlot()
        let (id, latest, finished) = clients.withLock { clients in
            clients.nextID += 1
            clients.slots[clients.nextID] = slot
            return (clients.nextID, clients.latest, clients.finished)
        }
        if let latest { slot.offer(latest) }
        if finished { slot.close() }
        return FrameSubscription(slot: slot) { [weak self] in self?.remove(id) }
    }

    /// Ends every subscription (the server stops).
    public func closeAll() {
        let slots = clients.withLock { clients in
            defer { clients.slots = [:] }
            return Array(clients.slots.values)
        }
        for slot in slots { slot.close() }
    }

    private func remove(_ id: Int) {
        _ = clients.withLock { $0.slots.removeValue(forKey: id) }
    }
}

/// One page's place in the broadcast: the newest frame not yet taken, or a waiting reader.
final class FrameSlot: Sendable {
    private struct State {
        var pending: [UInt8]?
        var reader: CheckedContinuation<[UInt8]?, Never>?
        var closed = false
        var dropped = 0
    }

    private let state = Mutex(State())

    var dropped: Int { state.withLock { $0.dropped } }

    /// Hands `frame` to a waiting reader, or keeps it in place of the one not yet taken.
    func offer(_ frame: [UInt8]) {
        let reader = state.withLock { state -> CheckedContinuation<[UInt8]?, Never>? in
            guard !state.closed else { return nil }
            if let reader = state.reader {
                state.reader = nil
                return reader
            }
            if state.pending != nil { state.dropped += 1 }
            state.pending = frame
            return nil
        }
        reader?.resume(returning: frame)
    }

    /// The next frame, waiting for one; nil once closed (or when the waiting task is cancelled).
    func next() async -> [UInt8]? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[UInt8]?, Never>) in
                let ready = state.withLock { state -> [UInt8]?? in
                    if let frame = state.pending {
                        state.pending = nil
                        return .some(frame)
                    }
                    if state.closed || Task.isCancelled { return .some(nil) }
                    state.reader = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            close()
        }
    }

    /// Ends the slot: a waiting reader gets nil; a frame not yet taken is still handed out first.
    func close() {
        let reader = state.withLock { state -> CheckedContinuation<[UInt8]?, Never>? in
            state.closed = true
            defer { state.reader = nil }
            return state.reader
        }
        reader?.resume(returning: nil)
    }
}

/// A subscriber's frames; leaving it (the connection closed) unsubscribes.
public final class FrameSubscription: Sendable {
    private let slot: FrameSlot
    private let onEnd: @Sendable () -> Void

    init(slot: FrameSlot, onEnd: @escaping @Sendable () -> Void) {
        (self.slot, self.onEnd) = (slot, onEnd)
    }

    deinit {
        slot.close()
        onEnd()
    }

    /// The next frame, waiting for one; nil once the broadcaster is closed.
    public func next() async -> [UInt8]? { await slot.next() }
}
