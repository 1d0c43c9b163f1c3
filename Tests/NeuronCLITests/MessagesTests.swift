import Foundation
import NeuronTraining
import Testing

/// `neuron help COMMAND` at a terminal `columns` wide (ArgumentParser reads `COLUMNS`).
private func help(_ command: String, columns: Int) throws -> String {
    let neuron = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("neuron")
    let process = Process()
    process.executableURL = neuron
    process.arguments = ["help", command]
    process.environment = ProcessInfo.processInfo.environment.merging(["COLUMNS": "\(columns)"]) { $1 }
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return text
}

/// A small iris run in its own folder, its data copied beside its config so that a test may remove it.
private func irisRun(_ name: String) throws -> (folder: String, run: String) {
    let folder = try scratchDirectory(name)
    try FileManager.default.copyItem(atPath: dataDirectory + "/iris.csv", toPath: folder + "/iris.csv")
    try (try String(contentsOfFile: dataDirectory + "/iris.yaml", encoding: .utf8))
        .write(toFile: folder + "/iris.yaml", atomically: true, encoding: .utf8)
    let run = folder + "/run"
    let trained = try runNeuron(["train", folder + "/iris.yaml", "--epochs", "3", "--output", run, "--quiet"])
    #expect(trained.status == 0, "\(trained.stderr)")
    return (folder, run)
}

@Suite("neuron's help and messages")
struct MessagesTests {
    @Test(
        "Each command's discussion wraps as whole paragraphs: no line ends where the next word would still have fitted",
        arguments: ["train", "gradcheck", "evaluate", "predict", "explain", "dashboard"], [80, 120])
    func helpWraps(command: String, columns: Int) throws {
        let text = try help(command, columns: columns)
        // The discussion: after the overview's paragraph, before USAGE.
        let lines = text.components(separatedBy: "\n")
        let usage = try #require(lines.firstIndex { $0.hasPrefix("USAGE:") })
        let overviewEnd = try #require(lines.firstIndex { $0.isEmpty })
        let discussion = Array(lines[overviewEnd..<usage])
        for (line, next) in zip(discussion, discussion.dropFirst()) where !line.isEmpty && !next.isEmpty {
            // ArgumentParser fills lines to at most columns - 1 characters and breaks one only when the
            // next word does not fit; a shorter line is a line break written into the text, which
            // wraps into a stub at any other width.
            let word = next.split(separator: " ").first.map(String.init) ?? ""
            #expect(line.count + 1 + word.count >= columns, "\(command) at \(columns) columns breaks early: \"\(line)\" / \"\(next)\"")
        }
    }

    @Test("Options read through a transform show their defaults too")
    func defaults() throws {
        let explain = try help("explain", columns: 200)
        for text in [
            "The input x, or comma-separated inputs x₁,…,xₙ. (default: 0.4)",
            "The weight w, or comma-separated weights, one per input. (default: 0.5)",
            "The bias b. (default: 0.6)", "The target t the output should reach. (default: 0.7)", "greater than 0. (default: 0.0001)",
        ] {
            #expect(explain.contains(text), "\(explain)")
        }
        let gradcheck = try help("gradcheck", columns: 200)
        for text in ["Central-difference step. (default: 1e-06)", "Absolute tolerance. (default: 1e-05)", "Relative tolerance. (default: 0.001)"] {
            #expect(gradcheck.contains(text), "\(gradcheck)")
        }
    }

    @Test("explain --layer -1 is read as a number and refused as one; a missing layer is refused before the data is read")
    func explainLayer() throws {
        let negative = try runNeuron(["explain", "--checkpoint", "nowhere", "--layer", "-1", "--unit", "0"])
        #expect(
            negative.status == 2 && negative.stderr == "neuron: --layer -1: layers, units, samples and positions are counted from 0\n",
            "\(negative.stderr)")
        let unit = try runNeuron(["explain", "--checkpoint", "nowhere", "--layer", "0", "--unit", "-2"])
        #expect(unit.status == 2 && unit.stderr.contains("--unit -2: layers, units, samples and positions are counted from 0"), "\(unit.stderr)")

        let (folder, run) = try irisRun("explain-layer")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.removeItem(atPath: folder + "/iris.csv")
        let layer = try runNeuron(["explain", "--checkpoint", run, "--layer", "5", "--unit", "0"])
        #expect(
            layer.status == 2 && layer.stderr.contains("layer 5: Network[Dense(4→16, tanh), Dense(16→3, softmax)] has layers 0 to 1"),
            "\(layer.stderr)")
        let unitOut = try runNeuron(["explain", "--checkpoint", run, "--layer", "1", "--unit", "3"])
        #expect(unitOut.status == 2 && unitOut.stderr.contains("unit 3 is out of range; it has units 0 to 2"), "\(unitOut.stderr)")
        // A unit that is there needs the data, which is gone: the checks above came first.
        let present = try runNeuron(["explain", "--checkpoint", run, "--layer", "1", "--unit", "2"])
        #expect(present.status == 2 && present.stderr.contains("iris.csv"), "\(present.stderr)")
    }

    @Test("evaluate --data names the config whose rows do not fit; predict hints only at a close column")
    func evaluateAndPredict() throws {
        let (folder, run) = try irisRun("evaluate-data")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let other = try runNeuron(["evaluate", run, "--data", dataDirectory + "/digits.yaml"])
        #expect(other.status == 2, "\(other.stderr)")
        #expect(
            other.stderr.contains("cannot evaluate on \(dataDirectory)/digits.yaml: its data has 64 features but the model was trained on 4"),
            "\(other.stderr)")

        try "a,b\n1,2\n".write(toFile: folder + "/unrelated.csv", atomically: true, encoding: .utf8)
        let unrelated = try runNeuron(["predict", run, folder + "/unrelated.csv"])
        #expect(unrelated.status == 2 && unrelated.stderr.contains("\"sepal_length\" is not in the header"), "\(unrelated.stderr)")
        #expect(!unrelated.stderr.contains("did you mean"), "\(unrelated.stderr)")
        try "sepal_lenght,sepal_width,petal_length,petal_width\n5.1,3.5,1.4,0.2\n".write(
            toFile: folder + "/typo.csv", atomically: true, encoding: .utf8)
        let typo = try runNeuron(["predict", run, folder + "/typo.csv"])
        #expect(typo.status == 2 && typo.stderr.contains("did you mean \"sepal_lenght\"?"), "\(typo.stderr)")
    }

    @Test("A run without test rows prints its validation accuracy once")
    func validationOnce() throws {
        let folder = try scratchDirectory("validation-once")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let trained = try runNeuron(["train", dataDirectory + "/iris.yaml", "--epochs", "2", "--output", folder + "/run", "--quiet"])
        #expect(trained.status == 0, "\(trained.stderr)")
        #expect(trained.stdout.components(separatedBy: "validation accuracy").count == 2, "\(trained.stdout)")
        #expect(trained.stdout.contains("validation loss"), "\(trained.stdout)")
    }

    @Test("Ctrl-C on neuron dashboard says the dashboard stopped, not a training")
    func dashboardInterrupt() throws {
        let (folder, run) = try irisRun("dashboard-stop")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let live = try LiveNeuron(["dashboard", run])
        _ = try live.dashboardURL()
        #expect(try live.interrupt() == 130)
        #expect(live.stderr.contains("neuron: dashboard of \(run) stopped by SIGINT; the run's files are unchanged"), "\(live.stderr)")
        #expect(!live.stderr.contains("training"), "\(live.stderr)")
    }

    @Test(
        "An unknown command is named, with the nearest command when it is a likely typo (else every command), then neuron's usage; exit status 2",
        arguments: [
            (["trian"], "unknown command 'trian'; did you mean 'train'?"),
            (["trian", "Data/xor.yaml", "--epochs", "3"], "unknown command 'trian'; did you mean 'train'?"),
            (["explian", "--checkpoint", "run"], "unknown command 'explian'; did you mean 'explain'?"),
            (["Train"], "unknown command 'Train'; did you mean 'train'?"),
            (["xyz"], "unknown command 'xyz'; the commands are train, gradcheck, evaluate, predict, explain, sample, export, dashboard, tokenizer"),
        ])
    func unknownCommand(arguments: [String], message: String) throws {
        let run = try runNeuron(arguments)
        #expect(run.status == 2 && run.stdout.isEmpty)
        #expect(run.stderr == "neuron: \(message)\nUsage: neuron <subcommand>\n  See 'neuron --help' for more information.\n", "\(run.stderr)")
    }

    @Test(
        "A missing argument or value, or an unknown option, prints the message and then the command's usage line",
        arguments: [
            (["train"], "Missing expected argument '<config>'", "Usage: neuron train [<options>] <config>"),
            (["train", "Data/xor.yaml", "--bogus"], "Unknown option '--bogus'", "Usage: neuron train [<options>] <config>"),
            (["explain", "--input"], "Missing value for '--input <input>'", "Usage: neuron explain <options>"),
            (["evaluate"], "Missing expected argument '<checkpoint>'", "Usage: neuron evaluate"),
        ])
    func usageAfterMisshapenLine(arguments: [String], message: String, usage: String) throws {
        let run = try runNeuron(arguments)
        #expect(run.status == 2 && run.stdout.isEmpty)
        let lines = run.stderr.split(separator: "\n").map(String.init)
        #expect(lines.first == "neuron: \(message)", "\(run.stderr)")
        #expect(lines.contains { $0.hasPrefix(usage) }, "\(run.stderr)")
        #expect(lines.last == "  See 'neuron \(arguments[0]) --help' for more information.", "\(run.stderr)")
        // A value the command refuses says what is allowed on its one line; no usage follows.
        let value = try runNeuron(["train", "Data/xor.yaml", "--epochs", "0"])
        #expect(value.status == 2 && value.stderr == "neuron: --epochs must be at least 1, got 0\n", "\(value.stderr)")
    }

    @Test("neuron --version prints the package's version, NeuronVersion.current, and exits 0")
    func version() throws {
        let run = try runNeuron(["--version"])
        #expect(run.status == 0 && run.stdout == "\(NeuronVersion.current)\n" && run.stderr.isEmpty, "\(run.stdout) \(run.stderr)")
        #expect(NeuronVersion.current.split(separator: ".").count == 3 && NeuronVersion.current.split(separator: ".").allSatisfy { Int($0) != nil })
    }

    @Test("A format-1 checkpoint.json is named as format 1, given as the file or as its run directory")
    func formatOne() throws {
        let folder = try scratchDirectory("format-one")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let state = folder + "/checkpoint.json"
        try #"{"config":{"model":{}},"epoch":3,"format":1,"step":30}"#.write(toFile: state, atomically: true, encoding: .utf8)
        let file = try runNeuron(["explain", "--checkpoint", state, "--layer", "0", "--unit", "0"])
        #expect(file.status == 2, "\(file.stderr)")
        #expect(
            file.stderr.hasPrefix("neuron: \(state): format: 1, a JSON run state (format 1's checkpoint.json) rather than a checkpoint"),
            "\(file.stderr)")
        #expect(!file.stderr.contains("bytes"), "\(file.stderr)")
        let directory = try runNeuron(["evaluate", folder])
        #expect(
            directory.status == 2 && directory.stderr.contains("\(state): format: 1, whose run state is this checkpoint.json"), "\(directory.stderr)")
        try #"{"something": "else"}"#.write(toFile: folder + "/other.json", atomically: true, encoding: .utf8)
        let other = try runNeuron(["predict", folder + "/other.json", dataDirectory + "/iris.csv"])
        #expect(other.status == 2 && other.stderr.contains("corrupt: a JSON file, not a checkpoint"), "\(other.stderr)")
    }
}
