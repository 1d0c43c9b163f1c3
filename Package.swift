// swift-tools-version: 6.1
// Neuron: a neural-network training engine written from scratch in Swift, over OpenBLAS.
// Dependencies point one way: C modules → NeuronCore → NeuronTraining → CLI, Benchmarks and the example; then tests.
import PackageDescription

let package = Package(
    name: "Neuron",
    products: [
        .library(name: "NeuronCore", targets: ["NeuronCore"]),
        .library(name: "NeuronTraining", targets: ["NeuronTraining"]),
        .library(name: "NeuronExport", targets: ["NeuronExport"]),
        .library(name: "NeuronDashboard", targets: ["NeuronDashboard"]),
        .executable(name: "neuron", targets: ["neuron"]),
    ],
    // `swift build --traits MPI` (Open MPI installed: `apt-get install openmpi-bin libopenmpi-dev`): `neuron train`
    // under `mpirun -np N` trains one model on N processes. Without the trait nothing touches MPI.
    // `swift build --traits OneDNN` (`apt-get install libdnnl-dev`): `training.products: bf16` runs every matrix
    // product of a Float network on bfloat16 operands through oneDNN, on CPUs with `avx512_bf16`.
    traits: [
        .trait(name: "MPI", description: "Data-parallel training over Open MPI (needs libopenmpi-dev)."),
        .trait(name: "OneDNN", description: "bfloat16 matrix products through oneDNN (needs libdnnl-dev)."),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        // `swift package generate-documentation --target NeuronCore`: the DocC catalog in Sources/NeuronCore.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // The dashboard's sockets: FlyingSocks, the non-blocking socket layer of FlyingFox (small, no
        // swift-nio, so the first build stays quick). The HTTP on top is the dashboard's own, bounded:
        // neither FlyingFox's HTTPServer nor Hummingbird holds its bounds (Docs/Dashboard.md has the measurements).
        .package(url: "https://github.com/swhitty/FlyingFox", exact: "0.27.1"),
    ],
    targets: [
        // MARK: - C seams

        /// OpenBLAS's `cblas.h`: the only way into C. Imported by `Tensor/BLAS.swift` alone.
        .systemLibrary(
            name: "CBLAS",
            pkgConfig: "openblas",
            providers: [.apt(["libopenblas-dev"])]
        ),

        /// zlib's `zlib.h`, for gzip-compressed data files (IDX). Imported by `Data/Gzip.swift` alone.
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),

        /// Open MPI's `mpi.h`, with the trait `MPI` only. Imported by `NeuronDistributed/MPI.swift` alone.
        .systemLibrary(
            name: "CMPI",
            pkgConfig: "ompi",
            providers: [.apt(["libopenmpi-dev"])]
        ),

        /// Float's element-wise kernels (exp, erf, tanh, …) in C, compiled for each x86-64 vector width
        /// and dispatched at run time: Swift builds for baseline x86-64. Imported by `Tensor/VectorKernels.swift` alone.
        .target(name: "CKernels"),

        /// bfloat16 products: the rounding in C (every build) and oneDNN's matmul on bf16 operands (with the
        /// trait `OneDNN`, which compiles against Debian's `libdnnl-dev` and opens `libdnnl.so.2` at its first
        /// bf16 product). Imported by `Tensor/BFloat16.swift` alone.
        .target(name: "COneDNN", cSettings: [.define("NEURON_ONEDNN", .when(traits: ["OneDNN"]))]),

        // MARK: - The engine

        /// Tensors, the neuron, layers, networks, optimizers, gradient checks, data. No I/O beyond data files.
        .target(name: "NeuronCore", dependencies: ["CBLAS", "CZlib", "CKernels", "COneDNN"]),

        // MARK: - The tool layer

        /// What turns the engine into a tool: config (YAML/JSON), checkpoints (safetensors), the
        /// view-model protocol, the training view models and their loop off the main actor, the
        /// preview view model, the run launcher and session that leave a run directory.
        .target(name: "NeuronTraining", dependencies: ["NeuronCore", .product(name: "Yams", package: "Yams")]),

        /// Data parallelism: one model trained by N processes under `mpirun`, gradients summed by one
        /// allreduce per step. Without the trait `MPI` it builds, and says that it was built without MPI.
        .target(
            name: "NeuronDistributed",
            dependencies: ["NeuronCore", "NeuronTraining", .target(name: "CMPI", condition: .when(traits: ["MPI"]))]
        ),

        /// Trained networks as ONNX models (preprocessing included) for ONNX Runtime and other
        /// deployment runtimes; the protocol-buffer encoding written by hand (encoding only).
        .target(name: "NeuronExport", dependencies: ["NeuronCore", "NeuronTraining"]),

        // MARK: - Views

        /// The terminal view: the progress line redrawn in place, plain lines for logs, `--json`
        /// lines, and the end-of-run report, all rendered from the view state.
        .target(name: "NeuronTerminal", dependencies: ["NeuronCore", "NeuronTraining"]),

        /// The browser view: an HTTP server binding a page (plain HTML, CSS and JavaScript, embedded in
        /// the binary) to a training view model: state out as Server-Sent Events, events in as POSTs;
        /// loopback and a token by default.
        .target(
            name: "NeuronDashboard",
            dependencies: ["NeuronCore", "NeuronTraining", .product(name: "FlyingSocks", package: "FlyingFox")],
            resources: [.embedInCode("Resources/dashboard.html")]
        ),

        // MARK: - Tools

        /// The `neuron` command line: a short declaration per command, calling into the library.
        .executableTarget(
            name: "neuron",
            dependencies: [
                "NeuronCore",
                "NeuronTraining",
                "NeuronDistributed",
                "NeuronTerminal",
                "NeuronDashboard",
                "NeuronExport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        /// `swift run -c release Benchmarks`: checks, then times, against the BLAS ceiling and the
        /// peers (NumPy, PyTorch: `Benchmarks/peers/`, run as separate processes).
        .executableTarget(
            name: "Benchmarks",
            dependencies: [
                "NeuronCore",
                "NeuronTraining",
                "NeuronTerminal",
                "NeuronDashboard",
                "AllocationCounter",
                "NeuronDistributed",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Benchmarks/Runner"
        ),
        /// Counts heap allocations in the benchmark process (its own malloc family over glibc's).
        .target(name: "AllocationCounter", path: "Benchmarks/AllocationCounter"),

        // MARK: - Examples

        /// `swift run TrainXOR`: Docs/Library.md's example (and the README's lines), built and run by CI so that it cannot rot.
        .executableTarget(name: "TrainXOR", dependencies: ["NeuronCore", "NeuronTraining"], path: "Examples/TrainXOR"),
        /// `swift run ExportONNX`: Docs/ONNX.md's library example, built and run by CI.
        .executableTarget(name: "ExportONNX", dependencies: ["NeuronCore", "NeuronExport"], path: "Examples/ExportONNX"),

        // MARK: - Tests

        .testTarget(name: "NeuronCoreTests", dependencies: ["NeuronCore"]),
        .testTarget(name: "NeuronTrainingTests", dependencies: ["NeuronTraining"]),
        .testTarget(name: "NeuronTerminalTests", dependencies: ["NeuronTerminal"]),
        .testTarget(name: "NeuronDashboardTests", dependencies: ["NeuronDashboard"]),
        /// Exports random networks and checks them with ONNX's checker and ONNX Runtime (the `.venv`'s Python).
        .testTarget(name: "NeuronExportTests", dependencies: ["NeuronExport"]),
        /// Runs the built `neuron` executable, as a user would, and reads its output and exit status.
        .testTarget(name: "NeuronCLITests", dependencies: ["neuron"]),
        /// Runs `neuron train` under `mpirun -np 2` against one process (with the trait `MPI`; without it, only
        /// that a neuron built without MPI refuses to start under mpirun).
        .testTarget(name: "NeuronMPITests", dependencies: ["neuron", "NeuronTraining", "NeuronDistributed"]),
    ],
    swiftLanguageModes: [.v6]
)
