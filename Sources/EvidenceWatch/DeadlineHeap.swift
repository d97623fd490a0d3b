/// Min-heap of (deadline, payload) with lazy invalidation: the owner checks, when an entry
/// pops, whether it still matters (by a sequence number it keeps beside the payload).
struct DeadlineHeap<Payload> {
    struct Entry {
        var due: UInt64
        var seq: UInt64
        var payload: Payload
    }

    private var items: [Entry] = []

    var isEmpty: Bool { items.isEmpty }
    var count: Int { items.count }
    var nextDue: UInt64? { items.first?.due }

    mutating func push(_ e: Entry) {
        items.append(e)
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            if less(items[i], items[parent]) {
                items.swapAt(i, parent)
                i = parent
            } else {
                break
            }
        }
    }

    /// Removes and returns the earliest entry if it is due at `now`.
    mutating func popDue(now: UInt64) -> Entry? {
        guard let first = items.first, first.due <= now else { return nil }
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            var i = 0
            while true {
                let l = 2 * i + 1, r = l + 1
                var m = i
                if l < items.count, less(items[l], items[m]) { m = l }
                if r < items.count, less(items[r], items[m]) { m = r }
                if m == i { break }
                items.swapAt(i, m)
                i = m
            }
        }
        return first
    }

    mutating func removeAll() { items.removeAll() }

    private func less(_ a: Entry, _ b: Entry) -> Bool {
        a.due != b.due ? a.due < b.due : a.seq < b.seq
    }
}
