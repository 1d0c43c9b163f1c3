import Foundation
import Testing

// `neuron tokenizer train|encode|decode`: the files it writes, the ids it prints, the text it decodes, Hugging Face's
// tokenizers reading its tokenizer.json to the same ids, and bad input refused with the file and place.

@Suite("neuron tokenizer: train, encode, decode")
struct TokenizerCommandTests {
    let directory: String
    let text: String

    init() throws {
        directory = try scratchDirectory("tokenizer")
        text = directory + "/shakespeare.txt"
        let shakespeare = try String(contentsOfFile: dataDirectory + "/tinyshakespeare.txt", encoding: .utf8)
        try String(shakespeare.prefix(60_000)).write(toFile: text, atomically: true, encoding: .utf8)
    }

    func ids(_ output: String) throws -> [Int] {
        try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [Int])
    }

    @Test("Train writes minbpe's .model and .vocab; encode prints the ids as JSON; decode gives the text back")
    func roundTrip() throws {
        let model = directory + "/s.model"
        let train = try runNeuron(["tokenizer", "train", text, "--vocab-size", "400", "--output", model, "--special", "<|endoftext|>"])
        #expect(train.status == 0, "\(train.stderr)")
        #expect(train.stderr.contains("merge 144/144"), "the last progress line: \(train.stderr)")
        #expect(train.stderr.contains("trained 144 merges on 60000 bytes"))
        let lines = try String(contentsOfFile: model, encoding: .utf8).split(separator: "\n")
        #expect(
            lines.prefix(4) == [
                "minbpe v1",
                Substring(#"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"#), "1",
                "<|endoftext|> 400",
            ])
        #expect(lines.count == 4 + 144)
        #expect(FileManager.default.fileExists(atPath: directory + "/s.vocab"))
        let sample = directory + "/romeo.txt"
        try "ROMEO:\nBut soft, what light through yonder window breaks?\n".write(toFile: sample, atomically: true, encoding: .utf8)
        let encoded = try runNeuron(["tokenizer", "encode", model, sample])
        #expect(encoded.status == 0, "\(encoded.stderr)")
        let ids = try ids(encoded.stdout)
        #expect(ids.count < 57 && ids.allSatisfy { (0..<400).contains($0) })
        let decoded = try runNeuron(["tokenizer", "decode", model] + ids.map(String.init))
        #expect(decoded.status == 0)
        #expect(decoded.stdout == (try String(contentsOfFile: sample, encoding: .utf8)))
    }

    @Test("Hugging Face's tokenizers reads the tokenizer.json written and gives the same ids")
    func huggingFace() throws {
        let json = directory + "/tokenizer.json"
        let train = try runNeuron(["tokenizer", "train", text, "--vocab-size", "600", "--output", json])
        #expect(train.status == 0, "\(train.stderr)")
        let encoded = try runNeuron(["tokenizer", "encode", json, text])
        #expect(encoded.status == 0, "\(encoded.stderr)")
        let python = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.venv/bin/python3")
            .standardized.path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [
            "-c",
            "import json, sys; from tokenizers import Tokenizer; t = Tokenizer.from_file(sys.argv[1]); "
                + "print(json.dumps(t.encode(open(sys.argv[2], encoding='utf-8').read()).ids))",
            json, text,
        ]
        let out = Pipe(), err = Pipe()
        (process.standardOutput, process.standardError) = (out, err)
        do { try process.run() } catch {
            Issue.record("this test needs \(python) with tokenizers: `.venv/bin/pip install tokenizers` (the README's test command)")
            return
        }
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(errors.suffix(400))")
        #expect(try ids(output) == (try ids(encoded.stdout)))
    }

    /// Runs the virtual environment's Python on `script` with `arguments`; its standard output.
    func python(_ script: String, _ arguments: [String]) throws -> String? {
        let python = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.venv/bin/python3")
            .standardized.path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-c", script] + arguments
        let out = Pipe(), err = Pipe()
        (process.standardOutput, process.standardError) = (out, err)
        do { try process.run() } catch {
            Issue.record("this test needs \(python) with tokenizers: `.venv/bin/pip install tokenizers` (the README's test command)")
            return nil
        }
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(errors.suffix(400))")
        return output
    }

    @Test("A tokenizer.json Hugging Face's trainer wrote (GPT-4's Split, or GPT-2's ByteLevel) gives its ids here too", arguments: ["gpt4", "gpt2"])
    func trainedByHuggingFace(pattern: String) throws {
        let json = directory + "/hf-\(pattern).json"
        let script = """
            import json, sys
            from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers
            t = Tokenizer(models.BPE())
            level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=sys.argv[3] == "gpt2")
            t.pre_tokenizer = level if sys.argv[3] == "gpt2" else pre_tokenizers.Sequence([
                pre_tokenizers.Split(Regex(sys.argv[4]), behavior="isolated"), level])
            t.train([sys.argv[1]], trainers.BpeTrainer(vocab_size=800, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                show_progress=False, special_tokens=["<|endoftext|>"]))
            t.save(sys.argv[2])
            print(json.dumps(t.encode(open(sys.argv[1], encoding="utf-8").read()).ids))
            """
        let gpt4 = #"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"#
        guard let theirs = try python(script, [text, json, pattern, gpt4]) else { return }
        let encoded = try runNeuron(["tokenizer", "encode", json, text])
        #expect(encoded.status == 0, "\(encoded.stderr)")
        #expect(try ids(encoded.stdout) == (try ids(theirs)))
    }

    @Test("Bad input: each a message naming the file and place, status 2, and no output file left")
    func badInput() throws {
        let model = directory + "/bad.model"
        let binary = directory + "/binary.txt"
        try Data([0x68, 0x69, 0x0A, 0xFF, 0x41]).write(to: URL(fileURLWithPath: binary))
        let cases: [([String], String)] = [
            (["tokenizer", "train", binary, "--vocab-size", "300", "--output", model], "binary.txt:2: invalid UTF-8 at byte offset 3 (0xFF)"),
            (["tokenizer", "train", text, "--vocab-size", "100", "--output", model], "--vocab-size 100: expected 256"),
            (["tokenizer", "train", text, "--vocab-size", "300", "--output", directory + "/x.tiktoken"], "expected a name ending .model"),
            (["tokenizer", "train", directory + "/none.txt", "--vocab-size", "300", "--output", model], "none.txt"),
            (["tokenizer", "train", text, "--vocab-size", "900000", "--output", model], "after"),
        ]
        for (arguments, expected) in cases {
            let run = try runNeuron(arguments)
            #expect(run.status == 2, "\(arguments)")
            #expect(run.stderr.contains(expected), "\(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: model))
        }
        let good = directory + "/good.model"
        #expect(try runNeuron(["tokenizer", "train", text, "--vocab-size", "300", "--output", good, "--special", "<|end|>"]).status == 0)
        let special = directory + "/special.txt"
        try "one<|end|>two".write(toFile: special, atomically: true, encoding: .utf8)
        let refused = try runNeuron(["tokenizer", "encode", good, special])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("special.txt: the text holds the special token <|end|> at byte 3"), "\(refused.stderr)")
        let allowed = try runNeuron(["tokenizer", "encode", good, special, "--allow-special"])
        #expect(try ids(allowed.stdout).contains(300))
        let unknown = try runNeuron(["tokenizer", "decode", good, "5", "301"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("id 301 at position 1 is no token"), "\(unknown.stderr)")
        // Not regular files: refused before they are opened (a FIFO's open would wait for a writer).
        let fifo = directory + "/fifo.model"
        #expect(mkfifo(fifo, 0o600) == 0)
        for (arguments, expected) in [
            (["tokenizer", "decode", fifo, "1"], "fifo.model: unreadable: it is a FIFO"),
            (["tokenizer", "encode", good, fifo], "fifo.model: cannot be read: it is a FIFO"),
            (["tokenizer", "encode", good, "/dev/zero"], "/dev/zero: cannot be read: it is a device"),
        ] {
            let run = try runNeuron(arguments)
            #expect(run.status == 2)
            #expect(run.stderr.contains(expected), "\(run.stderr)")
        }
        let hostile = directory + "/hostile.model"
        try "minbpe v1\n\n0\n97 98\n97 999\n".write(toFile: hostile, atomically: true, encoding: .utf8)
        let read = try runNeuron(["tokenizer", "decode", hostile, "97"])
        #expect(read.status == 2)
        #expect(read.stderr.contains("hostile.model:5: 999 is no token made before token 257"), "\(read.stderr)")
    }
}
