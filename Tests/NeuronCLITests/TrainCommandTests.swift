import Foundation
import NeuronTraining
import Testing

/// The repository's Data folder.
let dataDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Data").standardized.path

/// A fresh, empty directory for one test's runs.
func scratchDirectory(_ name: String) throws -> String {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-cli-\(name)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url.path
}

/// A run trained for a suite's tests: `config` written beside `files` (name → text) in a fresh
/// directory, trained quietly into its `run`; the run's directory, or an error with the CLI's message.
func trainRun(_ name: String, files: [String: String] = [:], config: String) throws -> String {
    let directory = try scratchDirectory(name)
    for (file, text) in files { try text.write(toFile: directory + "/" + file, atomically: true, encoding: .utf8) }
    try config.write(toFile: directory + "/run.yaml", atomically: true, encoding: .utf8)
    let train = try runNeuron(["train", directory + "/run.yaml", "--output", directory + "/run", "--quiet"])
    guard train.status == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: ["stderr": train.stderr]) }
    return directory + "/run"
}

/// The tensors of a run's checkpoint as raw bytes by name, read with the same rules as the
/// format (8-byte little-endian header length, JSON header, data), independently of our reader.
func checkpointTensors(_ directory: String) throws -> [String: Data] {
    let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/checkpoint.safetensors"))
    let length = Int(data.prefix(8).enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) })
    let header = try #require(try JSONSerialization.jsonObject(with: data.subdata(in: 8..<8 + length)) as? [String: Any])
    var tensors: [String: Data] = [:]
    for (name, value) in header where name != "__metadata__" {
        let offsets = try #require((value as? [String: Any])?["data_offsets"] as? [Int])
        tensors[name] = data.subdata(in: 8 + length + offsets[0]..<8 + length + offsets[1])
    }
    return tensors
}

struct Summary: Decodable {
    var phase: String
    var epoch: Int
    var step: Int
    var trainingLoss: Double?
    var evaluatedOn: String?
    var evaluationAccuracy: Double?
    var trainedOutput: Double?
    var trainedWeight: Double?
    var trainedBias: Double?
    /// The BLAS line: build, kernel family (and why it was chosen), threads.
    var blas: String?
    /// bf16 runs: the library and kernels of the products.
    var products: String?
}

func summary(_ directory: String) throws -> Summary {
    try JSONDecoder().decode(Summary.self, from: Data(contentsOf: URL(fileURLWithPath: directory + "/summary.json")))
}

@Suite("neuron train, gradcheck, evaluate, predict")
struct TrainCommandTests {
    @Test("XOR trains from its config and leaves every run file")
    func xor() throws {
        let out = try scratchDirectory("xor") + "/run"
        let run = try runNeuron(["train", dataDirectory + "/xor.yaml", "--output", out, "--quiet"])
        #expect(run.status == 0, "\(run.stderr)")
        for file in ["checkpoint.safetensors", "metrics.csv", "curves.svg", "summary.json"] {
            #expect(FileManager.default.fileExists(atPath: out + "/" + file), "missing \(file)")
        }
        // One checkpoint file: the run state is in its header, not in a second file that could tear from it.
        #expect(!FileManager.default.fileExists(atPath: out + "/checkpoint.json"))
        let s = try summary(out)
        #expect(s.phase == "finished" && s.epoch == 1_000)
        #expect(try #require(s.trainingLoss) < 1e-3)
        let metrics = try String(contentsOfFile: out + "/metrics.csv", encoding: .utf8).split(separator: "\n")
        #expect(metrics.count == 1_001 && metrics[0].hasPrefix("epoch,step,training_loss"))
        let svg = try String(contentsOfFile: out + "/curves.svg", encoding: .utf8)
        #expect(svg.hasPrefix("<svg") && svg.contains("training loss") && svg.contains(">epoch<"))
        #expect(run.stdout.contains("finished") && run.stdout.contains(out))
        // The JSON config is the same run.
        let json = try scratchDirectory("xor-json") + "/run"
        #expect(try runNeuron(["train", dataDirectory + "/xor.json", "--output", json, "--quiet"]).status == 0)
        #expect(try checkpointTensors(json) == checkpointTensors(out))
    }

    @Test("The BLAS threads are set once, at the run's start: the config's blasThreads, or 1 when each step splits its batch")
    func blasThreadsOfARun() throws {
        let directory = try scratchDirectory("blas-threads")
        let xor = try String(contentsOfFile: dataDirectory + "/xor.yaml", encoding: .utf8)
            .replacingOccurrences(of: "epochs: 1000", with: "epochs: 3\n  blasThreads: 2")
        for (name, extra, expected) in [("whole", "", "· 2 threads"), ("split", "\n  batchThreads: 2", "· 1 thread")] {
            let config = directory + "/\(name).yaml"
            try xor.replacingOccurrences(of: "batchSize: 4", with: "batchSize: 4" + extra).write(toFile: config, atomically: true, encoding: .utf8)
            let run = try runNeuron(["train", config, "--output", directory + "/" + name, "--quiet"])
            #expect(run.status == 0, "\(run.stderr)")
            let blas = try #require(try summary(directory + "/" + name).blas)
            #expect(blas.hasSuffix(expected), "\(name): \(blas)")
        }
    }

    @Test("The single neuron's config: the summary shows trained output 0.1000000000000007")
    func singleNeuron() throws {
        let out = try scratchDirectory("neuron") + "/run"
        let run = try runNeuron(["train", dataDirectory + "/single-neuron.yaml", "--output", out, "--quiet"])
        #expect(run.status == 0, "\(run.stderr)")
        let s = try summary(out)
        #expect(s.trainedOutput == 0.1000000000000007)
        #expect(s.trainedWeight == 0.4959537581015022 && s.trainedBias == 0.09537581015006125)
        #expect(run.stdout.contains("0.1000000000000007"))
        // Trained by the network engine, as the network it is; nothing was drawn, so no seed is claimed.
        #expect(run.stdout.hasPrefix("Network[Dense(1→1, tanh)]: finished after 100000 epochs, 100000 steps in "))
        let summaryText = try String(contentsOfFile: out + "/summary.json", encoding: .utf8)
        #expect(!run.stdout.contains("seed") && !summaryText.contains("seed"))
        // Byte for byte the checkpoint the neuron's own engine wrote before there was one engine.
        let old = try Data(contentsOf: URL(fileURLWithPath: dataDirectory + "/../Tests/Fixtures/neuron-engine-100000.safetensors"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: out + "/checkpoint.safetensors")) == old)
        let metrics = try String(contentsOfFile: out + "/metrics.csv", encoding: .utf8).split(separator: "\n")
        #expect(metrics.count == 101 && metrics[1] == "1000,1000,3.731300186840145e-10,,,")
    }

    @Test("A checkpoint of the neuron's old engine (stopped at 50,000 of 100,000 iterations) resumes to Docs/Reference.md §3's end")
    func oldNeuronCheckpoint() throws {
        let out = try scratchDirectory("old-neuron") + "/run"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: dataDirectory + "/../Tests/Fixtures/neuron-engine-50000.safetensors", toPath: out + "/checkpoint.safetensors")
        let run = try runNeuron(["train", dataDirectory + "/single-neuron.yaml", "--resume", out, "--epochs", "100000", "--quiet"])
        #expect(run.status == 0, "\(run.stderr)")
        let s = try summary(out)
        #expect(s.trainedOutput == 0.1000000000000007 && s.step == 100_000)
        #expect(s.trainedWeight == 0.4959537581015022 && s.trainedBias == 0.09537581015006125)
    }

    @Test(
        "Resuming at an epoch boundary ends with exactly the weights of an uninterrupted run",
        arguments: [("xor.yaml", "30", "60"), ("iris.yaml", "3", "6")])
    func resumeAtEpochBoundary(config: String, half: String, full: String) throws {
        let base = try scratchDirectory("resume")
        let straight = base + "/straight", split = base + "/split"
        #expect(try runNeuron(["train", dataDirectory + "/" + config, "--epochs", full, "--output", straight, "--quiet"]).status == 0)
        #expect(try runNeuron(["train", dataDirectory + "/" + config, "--epochs", half, "--output", split, "--quiet"]).status == 0)
        let resumed = try runNeuron(["train", dataDirectory + "/" + config, "--epochs", full, "--resume", split, "--quiet"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(try checkpointTensors(split) == checkpointTensors(straight))
        #expect(try summary(split).step == summary(straight).step)
    }

    @Test("Ctrl-C finishes the step, writes a checkpoint, exits 130; resuming matches an uninterrupted run")
    func interruptAndResume() throws {
        let base = try scratchDirectory("interrupt")
        let straight = base + "/straight", split = base + "/split"
        // digits.yaml, checkpointing every 100 epochs rather than every one (an fsync each).
        let config = base + "/digits.yaml"
        try (try String(contentsOfFile: dataDirectory + "/digits.yaml", encoding: .utf8))
            .replacingOccurrences(of: "path: digits.csv", with: "path: \(dataDirectory)/digits.csv")
            .appending("\noutput:\n  checkpointEvery: 100\n")
            .write(toFile: config, atomically: true, encoding: .utf8)
        // Long enough (13,500 steps, seconds in a debug build) that the interrupt lands inside the run.
        let arguments = ["train", config, "--epochs", "300", "--json"]
        #expect(try runNeuron(arguments + ["--output", straight]).status == 0)
        // Interrupt once progress shows a step inside the first epochs.
        let interrupted = try runNeuron(
            arguments + ["--output", split], interruptWhen: { $0.contains("\"phase\":\"running\"") && $0.contains("\"step\":") })
        #expect(interrupted.status == 130, "status \(interrupted.status): \(interrupted.stderr)")
        let stopped = try summary(split)
        #expect(stopped.phase == "stopped" && stopped.step < 300 * 45)
        let resumed = try runNeuron(arguments + ["--output", split, "--resume", split])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(try checkpointTensors(split) == checkpointTensors(straight))
        // Progress was one JSON object per update, the last one the summary.
        let lines = resumed.stdout.split(separator: "\n")
        #expect(lines.count > 2 && lines.allSatisfy { $0.hasPrefix("{") })
    }

    @Test("--resume DIR alone goes on with the run's own --epochs and --learning-rate, to its end; then there is nothing to do")
    func resumeKeepsOptions() throws {
        let base = try scratchDirectory("resume-options")
        let run = base + "/run"
        let config = base + "/digits.yaml"
        try (try String(contentsOfFile: dataDirectory + "/digits.yaml", encoding: .utf8))
            .replacingOccurrences(of: "path: digits.csv", with: "path: \(dataDirectory)/digits.csv")
            .appending("\noutput:\n  checkpointEvery: 100\n")
            .write(toFile: config, atomically: true, encoding: .utf8)
        let interrupted = try runNeuron(
            ["train", config, "--epochs", "300", "--learning-rate", "0.02", "--json", "--output", run],
            interruptWhen: { $0.contains("\"phase\":\"running\"") && $0.contains("\"step\":") })
        #expect(interrupted.status == 130, "status \(interrupted.status): \(interrupted.stderr)")
        #expect(try summary(run).phase == "stopped")
        // The printed hint's command: the config and --resume, nothing else.
        let resumed = try runNeuron(["train", config, "--resume", run, "--quiet"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(!resumed.stderr.contains("changed"), "\(resumed.stderr)")  // the learning rate stayed 0.02
        #expect(try summary(run).phase == "finished" && summary(run).epoch == 300)
        let again = try runNeuron(["train", config, "--resume", run, "--quiet"])
        #expect(again.status == 0 && again.stderr.contains("already finished its 300 epochs"), "\(again.stderr)")
    }

    @Test("An empty --output is refused, exit 2, before anything is written")
    func emptyOutput() throws {
        let result = try runNeuron(["train", dataDirectory + "/xor.yaml", "--output", ""])
        #expect(result.status == 2 && result.stderr.contains("--output must name a folder"), "\(result.stderr)")
    }

    @Test("Rows whose outputs are not finite stop evaluate and predict with exit 2 naming the row; no NaN is printed")
    func nonFiniteOutputs() throws {
        let base = try scratchDirectory("edge")
        let out = base + "/run"
        #expect(try runNeuron(["train", dataDirectory + "/iris.yaml", "--output", out, "--epochs", "3", "--quiet"]).status == 0)
        let rows =
            "sepal_length,sepal_width,petal_length,petal_width,species\n5.1,3.5,1.4,0.2,setosa\n3e38,-3e38,3e38,-3e38,versicolor\n6.9,3.1,5.4,2.3,virginica\n"
        try rows.write(toFile: base + "/edge.csv", atomically: true, encoding: .utf8)
        try (try String(contentsOfFile: dataDirectory + "/iris.yaml", encoding: .utf8)).replacingOccurrences(of: "iris.csv", with: "edge.csv")
            .write(toFile: base + "/edge.yaml", atomically: true, encoding: .utf8)
        let evaluated = try runNeuron(["evaluate", out, "--data", base + "/edge.yaml"])
        #expect(evaluated.status == 2 && evaluated.stderr.contains("data row 2 (of 3) gives outputs that are not finite"), "\(evaluated.stderr)")
        #expect(!evaluated.stdout.lowercased().contains("nan"), "\(evaluated.stdout)")
        let predicted = try runNeuron(["predict", out, base + "/edge.csv"])
        #expect(predicted.status == 2 && predicted.stderr.contains("row 2 gives outputs that are not finite") && predicted.stdout.isEmpty)
    }

    @Test("evaluate reports the accuracy printed at the end of training; predict writes one row per input")
    func evaluateAndPredict() throws {
        let out = try scratchDirectory("iris") + "/run"
        let trained = try runNeuron(["train", dataDirectory + "/iris.yaml", "--output", out, "--quiet"])
        #expect(trained.status == 0, "\(trained.stderr)")
        let accuracy = try #require(try summary(out).evaluationAccuracy)
        #expect(accuracy >= 0.9)
        let evaluated = try runNeuron(["evaluate", out])
        #expect(evaluated.status == 0, "\(evaluated.stderr)")
        #expect(evaluated.stdout.contains("accuracy  \(accuracy)"), "\(evaluated.stdout)")
        #expect(evaluated.stdout.contains("setosa") && evaluated.stdout.contains("confusion matrix"))
        let predicted = try runNeuron(["predict", out, dataDirectory + "/iris.csv"])
        #expect(predicted.status == 0, "\(predicted.stderr)")
        let rows = predicted.stdout.split(separator: "\n")
        #expect(rows.count == 151 && rows[0] == "row,class,p_setosa,p_versicolor,p_virginica")
        #expect(rows[1].hasPrefix("1,setosa,"))
        // Held-out rows in a file of their own, of another count and other statistics: evaluated
        // with the checkpoint's preprocessing, from another directory than the training's.
        let base = try scratchDirectory("held-out")
        let lines = try String(contentsOfFile: dataDirectory + "/iris.csv", encoding: .utf8).split(separator: "\n")
        try ([lines[0]] + lines.dropFirst().enumerated().filter { $0.offset % 5 == 0 }.map(\.element)).joined(separator: "\n")
            .appending("\n").write(toFile: base + "/held-out.csv", atomically: true, encoding: .utf8)
        try (try String(contentsOfFile: dataDirectory + "/iris.yaml", encoding: .utf8)).replacingOccurrences(of: "iris.csv", with: "held-out.csv")
            .write(toFile: base + "/held-out.yaml", atomically: true, encoding: .utf8)
        let heldOut = try runNeuron(["evaluate", out, "--data", base + "/held-out.yaml"])
        #expect(heldOut.status == 0, "\(heldOut.stderr)")
        #expect(heldOut.stdout.contains("on 30 data rows") && heldOut.stdout.contains("confusion matrix"), "\(heldOut.stdout)")
        // The saved config names its data by absolute path.
        let (header, _, _) = try checkpointHeader(out + "/checkpoint.safetensors")
        let metadata = try #require(header["__metadata__"] as? [String: String])
        let state = try #require(try JSONSerialization.jsonObject(with: Data(metadata["neuron.state"]!.utf8)) as? [String: Any])
        let data = try #require((state["config"] as? [String: Any])?["data"] as? [String: Any])
        #expect(data["path"] as? String == dataDirectory + "/iris.csv", "\(data)")
    }

    @Test("gradcheck passes on a configured network and fails with zero tolerance")
    func gradcheck() throws {
        let pass = try runNeuron(["gradcheck", dataDirectory + "/digits.yaml", "--samples", "20"])
        #expect(pass.status == 0, "\(pass.stdout)\(pass.stderr)")
        #expect(pass.stdout.contains("layers.0.weight") && pass.stdout.contains("PASS"))
        let strict = try runNeuron(["gradcheck", dataDirectory + "/xor.yaml", "--atol", "0", "--rtol", "0", "--json"])
        #expect(strict.status == 1)
        #expect(strict.stdout.contains("\"worst\"") && strict.stdout.contains("\"passed\" : false"), "\(strict.stdout)")
    }

    @Test("A run that diverges says where, exits 1 and leaves the last good checkpoint as it was")
    func divergence() throws {
        let dir = try scratchDirectory("diverge")
        let config = dir + "/sine.yaml"
        try """
        model:
          layers:
            - {units: 16, activation: relu}
            - {units: 1, activation: identity}
        data: {kind: synthetic, name: sine, count: 256}
        optimizer: {kind: sgd, learningRate: 0.01}
        training: {epochs: 2, batchSize: 16, precision: double}
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let out = dir + "/run"
        #expect(try runNeuron(["train", config, "--output", out, "--quiet"]).status == 0)
        let good = try checkpointTensors(out)
        let diverged = try runNeuron(["train", config, "--resume", out, "--epochs", "50", "--learning-rate", "1e6", "--quiet"])
        #expect(diverged.status == 1, "\(diverged.stdout)\(diverged.stderr)")
        #expect(diverged.stderr.contains("diverged at step") && !diverged.stdout.contains("diverged"), "\(diverged.stdout)")
        #expect(try checkpointTensors(out) == good)
    }

    @Test("Bad input exits 2 naming the file and place, and overwrites nothing")
    func badInput() throws {
        let dir = try scratchDirectory("bad")
        let config = dir + "/bad.yaml"
        try "model:\n  layers:\n    - units: 4\ndata:\n  kind: synthetic\n  name: xor\noptimizer:\n  learning_rate: 0.1\n".write(
            toFile: config, atomically: true, encoding: .utf8)
        let run = try runNeuron(["train", config, "--output", dir + "/run"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("bad.yaml:8:3") && run.stderr.contains("learningRate"), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/run"))
        // A finished run is never overwritten by a new one.
        let out = dir + "/xor"
        #expect(try runNeuron(["train", dataDirectory + "/xor.yaml", "--output", out, "--epochs", "5", "--quiet"]).status == 0)
        let before = try checkpointTensors(out)
        let again = try runNeuron(["train", dataDirectory + "/xor.yaml", "--output", out, "--epochs", "9", "--quiet"])
        #expect(again.status == 2 && again.stderr.contains("already holds a run"), "\(again.stderr)")
        #expect(try checkpointTensors(out) == before)
        // A corrupt checkpoint names its file.
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: out + "/checkpoint.safetensors"))
        let corrupt = try runNeuron(["evaluate", out])
        #expect(corrupt.status == 2 && corrupt.stderr.contains("checkpoint.safetensors"), "\(corrupt.stderr)")
    }
}

@Suite("The resume hint: neuron started again as this run was started")
struct ResumeHintTests {
    @Test(
        "How neuron was started decides the program: swift run (its configuration, the package when elsewhere) for a binary in .build, else argv[0]",
        arguments: [
            // SwiftPM's binary, from the package: `swift run`, `-c release` for a release build.
            ("/home/ada/Neuron/.build/x86_64-unknown-linux-gnu/debug/neuron", "/home/ada/Neuron", "swift run neuron"),
            ("/home/ada/Neuron/.build/x86_64-unknown-linux-gnu/release/neuron", "/home/ada/Neuron", "swift run -c release neuron"),
            ("/home/ada/Neuron/.build/release/neuron", "/home/ada/Neuron", "swift run -c release neuron"),
            // From another folder, where `swift run` alone finds no package.
            (
                "/home/ada/Neuron/.build/x86_64-unknown-linux-gnu/release/neuron", "/tmp",
                "swift run --package-path /home/ada/Neuron -c release neuron"
            ),
            ("/home/ada/my work/Neuron/.build/debug/neuron", "/home/ada", "swift run --package-path '/home/ada/my work/Neuron' neuron"),
            // Not a configuration's folder under .build: the path it was started by.
            ("/home/ada/Neuron/.build/artifacts/neuron", "/home/ada/Neuron", "/home/ada/Neuron/.build/artifacts/neuron"),
        ])
    func swiftRun(executable: String, workingDirectory: String, program: String) {
        let invocation = Invocation(argv0: executable, executable: executable, workingDirectory: workingDirectory)
        #expect(invocation.commandLine(["train", "xor.yaml", "--resume", "runs/xor"]) == program + " train xor.yaml --resume runs/xor")
    }

    @Test("A binary outside .build is started again by the argv[0] it was started by: a path as given, a name as found on PATH")
    func argv0() {
        let arguments = ["train", "xor.yaml", "--resume", "runs/xor"]
        #expect(
            Invocation(argv0: "neuron", executable: "/usr/local/bin/neuron", workingDirectory: "/home/ada").commandLine(arguments)
                == "neuron train xor.yaml --resume runs/xor")
        #expect(
            Invocation(argv0: "./neuron", executable: "/opt/neuron/neuron", workingDirectory: "/opt/neuron").commandLine(arguments)
                == "./neuron train xor.yaml --resume runs/xor")
        #expect(
            Invocation(argv0: "/opt/my tools/neuron", executable: "/opt/my tools/neuron", workingDirectory: "/").commandLine(arguments)
                == "'/opt/my tools/neuron' train xor.yaml --resume runs/xor")
        #expect(Invocation(argv0: "", executable: "/usr/bin/neuron", workingDirectory: "/").program == ["neuron"])
        #expect(Invocation.installed.commandLine(arguments) == "neuron train xor.yaml --resume runs/xor")
    }

    @Test(
        "Each word is quoted where a POSIX shell would split or expand it",
        arguments: [
            ("runs/xor-2.yaml", "runs/xor-2.yaml"), ("a=b,c:d@e%f+g_h", "a=b,c:d@e%f+g_h"), ("", "''"), ("my runs/xor.yaml", "'my runs/xor.yaml'"),
            ("it's", #"'it'\''s'"#), ("$HOME", "'$HOME'"), ("a;b", "'a;b'"), ("*.yaml", "'*.yaml'"), ("~/x", "'~/x'"), ("é", "'é'"),
            ("line\nbreak", "'line\nbreak'"),
        ])
    func quoting(word: String, quoted: String) {
        #expect(Invocation.quoted(word) == quoted)
    }

    @Test("Ctrl-C prints a resume command that starts this neuron as it was started and, run by a shell, resumes the run to its end")
    func hintRuns() throws {
        // A folder with a quote in its name, a config and a run directory whose names a shell would split or expand.
        let folder = try scratchDirectory("resume-hint") + "/it's here"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: dataDirectory + "/xor.yaml", toPath: folder + "/xor long.yaml")
        let stopped = try runNeuron(
            ["train", "xor long.yaml", "--epochs", "100000000", "--output", "run $HOME"], in: folder, interruptWhen: { $0.contains("running") })
        #expect(stopped.status == 130, "\(stopped.stderr)")
        let hint = "  resume with: "
        let command = String(
            try #require(stopped.stdout.split(separator: "\n").first { $0.hasPrefix(hint) }, "\(stopped.stdout)").dropFirst(hint.count))
        // This neuron is SwiftPM's, run from a folder outside its package: swift run, with the package.
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("neuron")
        let package = URL(fileURLWithPath: dataDirectory).deletingLastPathComponent().resolvingSymlinksInPath().path
        let release = executable.deletingLastPathComponent().lastPathComponent == "release"
        let program = "swift run --package-path \(Invocation.quoted(package))\(release ? " -c release" : "") neuron"
        #expect(command == program + " train 'xor long.yaml' --resume 'run $HOME'")
        // The words after the program, read by a shell, resume the run (this neuron standing for swift run's).
        let stoppedAt = try summary(folder + "/run $HOME").epoch
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", "exec \"$0\"" + command.dropFirst(program.count) + " --epochs \(stoppedAt + 3) --quiet", executable.path]
        shell.currentDirectoryURL = URL(fileURLWithPath: folder)
        shell.standardOutput = FileHandle.nullDevice
        try shell.run()
        shell.waitUntilExit()
        #expect(shell.terminationStatus == 0)
        let resumed = try summary(folder + "/run $HOME")
        #expect(resumed.phase == "finished" && resumed.epoch == stoppedAt + 3, "\(resumed)")
    }
}
