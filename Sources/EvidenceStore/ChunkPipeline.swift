import Dispatch
import Foundation
import Glibc
import Synchronization

/// Streams a file through SHA-256 with the I/O on its own thread: while the calling thread
/// hashes chunk k, the I/O thread reads chunk k+1 (and, when copying, writes chunk k).
/// Memory is fixed at `depth` buffers of `chunkSize`, whatever the file size.
final class ChunkPipeline: @unchecked Sendable {   // ownership hand-off: a buffer is the I/O thread's until queued, the hasher's until released (the semaphores order it)
    static let depth = 3
    /// 256 KiB: the I/O thread stays ahead of SHA-256 (a read from the page cache is ~10x
    /// faster than hashing it) and syscalls are a few thousand per GiB, while the three buffers
    /// take 0.75 MiB instead of 3 MiB of a process's resident memory.
    static let chunkSize = 256 << 10

    private let src: Int32
    private let path: String
    private let sink: TempFile?
    private let buffers: [UnsafeMutableRawBufferPointer]
    private let ready = DispatchSemaphore(value: 0)
    // Created at 0 and signalled up: libdispatch traps when a semaphore is destroyed below
    // the value it was created with.
    private let free = DispatchSemaphore(value: 0)
    private let ioDone = DispatchSemaphore(value: 0)
    private struct Shared {
        var queue: [(index: Int, count: Int)] = []
        /// Holders of each buffer (hasher, writer); free again at 0.
        var uses = Array(repeating: 0, count: ChunkPipeline.depth)
        var ioError: StoreError?
    }
    private let shared = Mutex(Shared())

    /// Files up to this size are read, hashed and written on the calling thread through one
    /// buffer: for them a second thread costs more than the overlap gains (bursts of small files).
    static let inlineLimit: Int64 = 256 << 10

    /// `expectedSize`: what fstat said; a file no larger than `inlineLimit` is done inline.
    init(src: Int32, path: String, sink: TempFile?, expectedSize: Int64? = nil) {
        self.src = src
        self.path = path
        self.sink = sink
        let inline = expectedSize.map { $0 <= Self.inlineLimit } ?? false
        // Inline, the buffer is the file's size in whole pages (a file that grew is read in more
        // passes), not `inlineLimit` (`FileHasher.readBuffer`).
        let size = inline ? FileHasher.readBuffer(for: expectedSize ?? 0, cap: Int(Self.inlineLimit)) : Self.chunkSize
        buffers = (0..<(inline ? 1 : Self.depth)).map { _ in
            UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 4096)
        }
        for _ in 0..<Self.depth { free.signal() }
    }

    deinit { buffers.forEach { $0.deallocate() } }

    /// Hashes everything from the current offset to the end; returns the digest and byte count.
    /// `extra`: more digests of the same chunks (a rule's `digests`), computed beside the SHA-256.
    func run(hasher: SHA256Hasher, extra: ExtraDigests? = nil, progress: ((Int64) -> Void)?) throws(StoreError) -> Int64 {
        _ = posix_fadvise(src, 0, 0, POSIX_FADV_SEQUENTIAL)
        if buffers.count == 1 { return try runInline(hasher: hasher, extra: extra, progress: progress) }
        let thread = Thread { [self] in ioLoop() }
        thread.stackSize = 1 << 20
        thread.start()
        var total: Int64 = 0
        while true {
            ready.wait()
            let next = shared.withLock { $0.queue.isEmpty ? nil : $0.queue.removeFirst() }
            guard let (index, count) = next else { break }    // end of stream (or I/O error)
            let chunk = UnsafeRawBufferPointer(rebasing: buffers[index][0..<count])
            if let extra { extra.update(chunk, with: hasher) } else { hasher.update(chunk) }
            total += Int64(count)
            release(index)
            progress?(total)
        }
        ioDone.wait()
        if let ioError = shared.withLock({ $0.ioError }) { throw ioError }
        return total
    }

    /// One thread, one buffer: read, hash, write until the end (a file that grew is read on).
    private func runInline(hasher: SHA256Hasher, extra: ExtraDigests?, progress: ((Int64) -> Void)?) throws(StoreError) -> Int64 {
        let buf = buffers[0]
        var total: Int64 = 0
        while true {
            var n: Int
            repeat { n = read(src, buf.baseAddress, buf.count) } while n < 0 && errno == EINTR
            if n < 0 { throw StoreError.from(errno: errno, path: path, operation: "read") }
            if n == 0 { return total }
            let chunk = UnsafeRawBufferPointer(rebasing: buf[0..<n])
            if let extra { extra.update(chunk, with: hasher) } else { hasher.update(chunk) }
            try sink?.write(chunk)
            total += Int64(n)
            progress?(total)
        }
    }

    private func release(_ index: Int) {
        let freed = shared.withLock { s in
            s.uses[index] -= 1
            return s.uses[index] == 0
        }
        if freed { free.signal() }
    }

    private func ioLoop() {
        defer {
            // One signal more than chunks queued: the hasher finds the queue empty and stops.
            ready.signal()
            ioDone.signal()
        }
        var k = 0
        while true {
            free.wait()
            let index = k % Self.depth
            let buf = buffers[index]
            var n: Int
            repeat { n = read(src, buf.baseAddress, buf.count) } while n < 0 && errno == EINTR
            if n < 0 { fail(StoreError.from(errno: errno, path: path, operation: "read")); return }
            if n == 0 { return }
            let holders = sink == nil ? 1 : 2
            shared.withLock { s in
                s.uses[index] = holders
                s.queue.append((index, n))
            }
            ready.signal()
            if let sink {
                do throws(StoreError) {
                    try sink.write(UnsafeRawBufferPointer(rebasing: buf[0..<n]))
                } catch {
                    fail(error)
                    release(index)
                    return
                }
                release(index)
            }
            k += 1
        }
    }

    private func fail(_ e: StoreError) {
        shared.withLock { s in if s.ioError == nil { s.ioError = e } }
    }
}
