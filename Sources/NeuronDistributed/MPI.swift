// The one seam to Open MPI: the only file that imports `CMPI`, and only with the package trait `MPI`
// (`swift build --traits MPI`). Without it this file keeps the same few functions, and starting
// fails with a message saying how to build with MPI; nothing else in the package knows the difference.
import Foundation
import NeuronCore

#if MPI
import CMPI
#endif

/// The MPI calls the engine makes, on `MPI_COMM_WORLD`, each failure turned into ``DistributedError``.
enum MPI {
    /// Whether this build can start MPI.
    #if MPI
    static let isBuilt = true
    #else
    static let isBuilt = false
    #endif

    #if MPI
    /// Starts MPI for calls from one thread at a time (the CLI's main thread, then the training
    /// loop's); errors are returned rather than ending the process, so that each says what failed.
    /// - Returns: this process's rank and the number of processes.
    static func initialize() throws(DistributedError) -> (rank: Int, size: Int) {
        var provided: Int32 = 0
        try check(
            MPI_Init_thread(
                nil,  // argc: Open MPI needs no arguments
                nil,  // argv
                Int32(MPI_THREAD_SERIALIZED),  // required: the loop's thread calls, never two at once
                &provided),
            "MPI_Init_thread")
        guard provided >= Int32(MPI_THREAD_SERIALIZED) else {
            throw .failed("MPI_Init_thread", "this MPI offers thread level \(provided), below MPI_THREAD_SERIALIZED")
        }
        try check(MPI_Comm_set_errhandler(cmpi_comm_world(), cmpi_errors_return()), "MPI_Comm_set_errhandler")
        var rank: Int32 = 0, size: Int32 = 0
        try check(MPI_Comm_rank(cmpi_comm_world(), &rank), "MPI_Comm_rank")
        try check(MPI_Comm_size(cmpi_comm_world(), &size), "MPI_Comm_size")
        return (Int(rank), Int(size))
    }

    /// Each element of `buffer` replaced by its sum over all processes (`MPI_Allreduce` in place),
    /// in pieces of at most 2³⁰ elements (MPI counts are 32-bit).
    static func sum<Scalar: TensorScalar>(_ buffer: UnsafeMutableBufferPointer<Scalar>) throws(DistributedError) {
        try inPieces(buffer) { (start, count) throws(DistributedError) in
            try check(
                MPI_Allreduce(
                    cmpi_in_place(),  // sendbuf: the sum replaces the input
                    start,  // recvbuf
                    count,  // count
                    datatype(Scalar.self),  // datatype
                    cmpi_sum(),  // op
                    cmpi_comm_world()),  // comm
                "MPI_Allreduce")
        }
    }

    /// The smallest and largest of `value` over all processes.
    static func range(_ value: UInt64) throws(DistributedError) -> ClosedRange<UInt64> {
        var low = value, high = value
        try check(MPI_Allreduce(cmpi_in_place(), &low, 1, cmpi_uint64(), cmpi_min(), cmpi_comm_world()), "MPI_Allreduce")
        try check(MPI_Allreduce(cmpi_in_place(), &high, 1, cmpi_uint64(), cmpi_max(), cmpi_comm_world()), "MPI_Allreduce")
        return low...high
    }

    /// `buffer` on every process replaced by rank 0's (`MPI_Bcast`).
    static func broadcast<Scalar: TensorScalar>(_ buffer: UnsafeMutableBufferPointer<Scalar>) throws(DistributedError) {
        try inPieces(buffer) { (start, count) throws(DistributedError) in
            try check(
                MPI_Bcast(
                    start,  // buffer
                    count,  // count
                    datatype(Scalar.self),  // datatype
                    0,  // root
                    cmpi_comm_world()),  // comm
                "MPI_Bcast")
        }
    }

    /// Ends MPI for this process after every process's last collective call.
    static func finalize() { MPI_Finalize() }

    /// Ends every process of the run with `status` (`MPI_Abort`): for a process that cannot go on
    /// while the others wait for it.
    static func abort(_ status: Int32) -> Never {
        MPI_Abort(cmpi_comm_world(), status)
        fatalError("MPI_Abort returned")
    }

    private static func datatype<Scalar: TensorScalar>(_: Scalar.Type) -> MPI_Datatype {
        Scalar.self == Double.self ? cmpi_double() : cmpi_float()
    }

    private static func inPieces<Scalar>(
        _ buffer: UnsafeMutableBufferPointer<Scalar>, _ body: (UnsafeMutablePointer<Scalar>, Int32) throws(DistributedError) -> Void
    ) throws(DistributedError) {
        guard let base = buffer.baseAddress else { return }
        var offset = 0
        while offset < buffer.count {
            let count = min(buffer.count - offset, 1 << 30)
            try body(base + offset, Int32(count))
            offset += count
        }
    }

    private static func check(_ code: Int32, _ call: String) throws(DistributedError) {
        guard code != MPI_SUCCESS else { return }
        var text = [CChar](repeating: 0, count: Int(MPI_MAX_ERROR_STRING) + 1), length: Int32 = 0
        MPI_Error_string(code, &text, &length)
        throw .failed(call, String(decoding: text.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    #else
    static func initialize() throws(DistributedError) -> (rank: Int, size: Int) { throw .notBuilt }
    // Unreachable: without MPI no group exists to call them.
    static func sum<Scalar: TensorScalar>(_ buffer: UnsafeMutableBufferPointer<Scalar>) throws(DistributedError) { throw .notBuilt }
    static func range(_ value: UInt64) throws(DistributedError) -> ClosedRange<UInt64> { throw .notBuilt }
    static func broadcast<Scalar: TensorScalar>(_ buffer: UnsafeMutableBufferPointer<Scalar>) throws(DistributedError) { throw .notBuilt }
    static func finalize() {}
    static func abort(_ status: Int32) -> Never { exit(status) }
    #endif
}
