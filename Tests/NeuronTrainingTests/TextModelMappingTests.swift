import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

/// Docs/Text.md's PyTorch mapping of a text model's checkpoint, written out in NumPy: the
/// vocabulary from the run state, `nn.Embedding` rows, a position table added, Bengio's context
/// concatenated, `nn.Linear` at each position, `nn.RNN` and `nn.GRU` (PyTorch's equations, gate order
/// r, z, n, the learned `h0` as `hx`), and a GPT's pieces: a residual block `x + body(x)` over its
/// nested layers (tensors `body.j.…`), `nn.LayerNorm` (biased variance, epsilon inside the root),
/// `nn.GELU` in both forms, nanoGPT's causal self-attention (q, k, v the three row blocks of
/// `c_attn`, each head its own columns of them, scores scaled by 1/√size, later positions masked,
/// softmax, then `c_proj`), dropout as evaluation runs it (not at all), a tied head (the token
/// embedding's table `layers.0.weight` as `lm_head.weight`, no bias); then the softmax of the last
/// position's scores: the probabilities of the character after the prefix, the context cropped to
/// its last block as sampling crops it. It walks the config's layer list as the checkpoint stores
/// it, or the list `model.transformer` stands for, written out here from Docs/Config.md's rule, in
/// float64 from the stored tensors.
private let numpyNextCharacter = #"""
    import json, math, sys
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load_file

    path, prefix = sys.argv[1], sys.argv[2]
    t = {k: v.astype(np.float64) for k, v in load_file(path).items()}
    with safe_open(path, framework="np") as f:
        state = json.loads(f.metadata()["neuron.state"])
    vocabulary = state["vocabulary"]                   # token i is vocabulary[i]; "" is the boundary
    block = len(state["featureNames"])                 # the positions a sample holds: t0 … t(block−1)
    tokens = ([0] + [vocabulary.index(c) for c in prefix])[-block:]   # a longer context cropped to its last block
    sigmoid = lambda z: 1 / (1 + np.exp(-z))
    erf = np.vectorize(math.erf)
    activations = {"tanh": np.tanh, "sigmoid": sigmoid, "relu": lambda z: np.maximum(z, 0), "identity": lambda z: z}

    def layer_list(model):                             # model.layers, or the layers model.transformer stands for (Docs/Config.md)
        if not model.get("transformer"):
            return model["layers"]
        c = model["transformer"]
        dropout = [{"kind": "dropout"}] if c.get("dropout", 0) > 0 else []
        attention = {"kind": "residual", "layers": [{"kind": "layerNorm"}, {"kind": "attention", "heads": c["heads"]}] + dropout}
        mlp = {"kind": "residual", "layers": [{"kind": "layerNorm"}, {"units": c.get("mlpRatio", 4) * c["features"], "activation": "identity"},
                                             {"kind": "gelu"}, {"units": c["features"], "activation": "identity"}] + dropout}
        head = {"kind": "tiedHead"} if c.get("tieWeights", False) else {"units": len(vocabulary), "activation": "identity"}
        return [{"kind": "embedding"}, {"kind": "positionEmbedding"}] + dropout + [attention, mlp] * c["blocks"] + [{"kind": "layerNorm"}, head]
    def softmax_rows(z):
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def run(layers, names, h):                         # h: (time, features); names: the tensors' prefix, "layers." at the top
        for i, layer in enumerate(layers):
            kind, p = layer.get("kind", "dense"), (lambda name, i=i: t[f"{names}{i}.{name}"])
            if kind == "embedding":                    # nn.Embedding
                h = p("weight")[tokens]
            elif kind == "positionEmbedding":          # a learned row per position, added
                h = h + p("weight")[: len(h)]
            elif kind == "context":                    # the last `size` positions' vectors, oldest first, zeros before the start
                k = layer["size"]
                padded = np.vstack([np.zeros((k - 1, h.shape[1])), h])
                h = np.hstack([padded[j : j + len(h)] for j in range(k)])
            elif kind == "dense":                      # nn.Linear at every position
                h = activations[layer.get("activation", "tanh")](h @ p("weight").T + p("bias"))
            elif kind == "tiedHead":                   # the token embedding's table as the head's weight, no bias
                h = h @ t["layers.0.weight"].T
            elif kind in ("rnn", "gru"):               # nn.RNN / nn.GRU, hx = h0
                state_h, out = p("h0"), []
                W, U, b, c = p("weight_ih_l0"), p("weight_hh_l0"), p("bias_ih_l0"), p("bias_hh_l0")
                for x in h:
                    if kind == "rnn":
                        state_h = np.tanh(W @ x + b + U @ state_h + c)
                    else:
                        gi, gh, n = W @ x + b, U @ state_h + c, len(state_h)
                        r, z = sigmoid(gi[:n] + gh[:n]), sigmoid(gi[n : 2 * n] + gh[n : 2 * n])
                        candidate = np.tanh(gi[2 * n :] + r * gh[2 * n :])
                        state_h = (1 - z) * candidate + z * state_h
                    out.append(state_h)
                h = np.array(out)
            elif kind == "residual":                   # x + body(x), the body's tensors under "body."
                h = h + run(layer["layers"], f"{names}{i}.body.", h)
            elif kind == "dropout":                    # off in evaluation
                pass
            elif kind == "layerNorm":                  # nn.LayerNorm: each position over its features, biased variance
                mean = h.mean(axis=1, keepdims=True)
                variance = ((h - mean) ** 2).mean(axis=1, keepdims=True)
                h = (h - mean) / np.sqrt(variance + layer.get("epsilon", 1e-5)) * p("weight") + p("bias")
            elif kind == "gelu":                       # nn.GELU(approximate=...)
                if layer.get("approximation", "none") == "tanh":
                    h = h / 2 * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))
                else:
                    h = h / 2 * (1 + erf(h / math.sqrt(2)))
            elif kind == "attention":                  # nanoGPT's CausalSelfAttention, head by head
                time, features = h.shape
                size = features // layer["heads"]
                qkv = h @ p("c_attn.weight").T + p("c_attn.bias")
                q, k, v = qkv[:, :features], qkv[:, features : 2 * features], qkv[:, 2 * features :]
                later = np.triu(np.ones((time, time), dtype=bool), 1)
                heads = []
                for head in range(layer["heads"]):
                    columns = slice(head * size, (head + 1) * size)
                    scores = np.where(later, -np.inf, q[:, columns] @ k[:, columns].T / math.sqrt(size))
                    heads.append(softmax_rows(scores) @ v[:, columns])
                h = np.hstack(heads) @ p("c_proj.weight").T + p("c_proj.bias")
            else:
                raise SystemExit(f"the NumPy mapping has no layer kind {kind!r}")
        return h

    print(json.dumps(softmax_rows(run(layer_list(state["config"]["model"]), "layers.", None)[-1]).tolist()))
    """#

/// A GPT of 2 blocks as nanoGPT builds one, from the layer kinds there are: features 8, 2 heads,
/// an MLP of 32 with the exact GELU, PyTorch's epsilon.
private let gpt = """
    [{kind: embedding, features: 8}, {kind: positionEmbedding},
     {kind: residual, layers: [{kind: layerNorm}, {kind: attention, heads: 2}]},
     {kind: residual, layers: [{kind: layerNorm}, {units: 32, activation: identity}, {kind: gelu}, {units: 8, activation: identity}]},
     {kind: residual, layers: [{kind: layerNorm}, {kind: attention, heads: 2}]},
     {kind: residual, layers: [{kind: layerNorm}, {units: 32, activation: identity}, {kind: gelu}, {units: 8, activation: identity}]},
     {kind: layerNorm}, {units: 27, activation: identity}]
    """

/// The other choices: GELU's tanh form, epsilons other than PyTorch's default, 4 heads of 2
/// features, dropout (which sampling must leave out) after the embeddings and in each block.
private let gptVariant = """
    [{kind: embedding, features: 8}, {kind: positionEmbedding}, {kind: dropout, rate: 0.2},
     {kind: residual, layers: [{kind: layerNorm, epsilon: 0.01}, {kind: attention, heads: 4}, {kind: dropout, rate: 0.2}]},
     {kind: residual, layers: [{kind: layerNorm, epsilon: 0.01}, {units: 16, activation: identity}, {kind: gelu, approximation: tanh},
                               {units: 8, activation: identity}, {kind: dropout, rate: 0.2}]},
     {kind: residual, layers: [{kind: layerNorm}, {kind: attention, heads: 4}]},
     {kind: residual, layers: [{kind: layerNorm}, {units: 16, activation: identity}, {kind: gelu, approximation: tanh}, {units: 8, activation: identity}]},
     {kind: layerNorm, epsilon: 0.001}, {units: 27, activation: identity}]
    """

/// A GPT from `model.transformer`'s sizes (2 blocks, 2 heads, features 8, a position table of 12
/// rows), trained on blocks of 8 positions with the longer words cut into windows, so that
/// sampling crops: `tieWeights` chooses the head.
private func transformer(tied: Bool) -> TrainedModel {
    TrainedModel(
        model: "{transformer: {blocks: 2, heads: 2, features: 8, positions: 12, tieWeights: \(tied)}}",
        data: "blockSize: 8, longLines: window",
        prefixes: ["", "q", "th", "quickly", "unbelievab", "uncharacteristics"])
}

/// A text model the mappings are held to: its `model:` and extra `data:` keys, and the prefixes.
struct TrainedModel: Sendable, CustomTestStringConvertible {
    var model: String
    var data = ""
    /// None (the boundary token alone), short ones, and one of 17 characters, which fills every
    /// position of words-small.txt's default block (its longest line's 17 and the end); for a
    /// block of 8, "quickly" fills it and the two after are cropped to their last 8 tokens.
    var prefixes = ["", "q", "th", "unbelievab", "uncharacteristics"]

    init(model: String, data: String = "", prefixes: [String]? = nil) {
        (self.model, self.data) = (model, data)
        if let prefixes { self.prefixes = prefixes }
    }

    init(layers: String) { self.init(model: "{layers: \(layers)}") }

    var testDescription: String { data.isEmpty ? model : "\(model), data: {\(data)}" }
}

/// The model trained one epoch on words-small.txt (25 Adam steps without windows: weights well
/// away from their initial values, layer norms' ones and zeros included), its checkpoint written
/// to `directory` and read back as `neuron sample` reads it.
private func trainedCheckpoint(_ trained: TrainedModel, in directory: CheckpointTestDirectory) throws -> LoadedCheckpoint {
    let config = try config(
        """
        model: \(trained.model)
        data: {kind: text, path: words-small.txt\(trained.data.isEmpty ? "" : ", " + trained.data)}
        optimizer: {kind: adam, learningRate: 0.01}
        training: {epochs: 1, batchSize: 32, seed: 11}
        """)
    let run = try RunBuilder.build(config)
    var engine = try #require(run.engine as? NetworkTrainingEngine<Float, Adam<Float>>)
    while engine.stepsTaken < engine.totalSteps { _ = engine.step() }
    try Checkpoint(engine, config: config, preprocessing: run.preprocessing).write(to: directory.path)
    return try Checkpoint.read(directory.path)
}

/// The engine's probabilities of the character after each of `prefixes`, by `neuron sample
/// --probabilities`'s path.
private func engineProbabilities(_ saved: LoadedCheckpoint, _ prefixes: [String]) throws -> [[Double]] {
    let vocabulary = try #require(saved.state.vocabulary)
    var network = try Prediction<Float>.network(saved)
    return try prefixes.map { prefix in
        try network.nextTokenProbabilities(after: [Vocabulary.boundary] + vocabulary.encode(prefix)!, rule: try SamplingRule())
    }
}

/// Expects the two distributions over 27 tokens to agree within `tolerance`, and `reference` to
/// sum to 1 within `sumTolerance` (float64 NumPy: rounding only; torch's float32: its own rounding).
private func expectAgreement(
    _ engine: [Double], _ reference: [Double], tolerance: Double, sumTolerance: Double, _ what: String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(reference.count == 27 && engine.count == 27, "\(what): \(reference.count) and \(engine.count) tokens", sourceLocation: sourceLocation)
    let worst = zip(engine, reference).map { abs($0 - $1) }.max() ?? .infinity
    #expect(worst < tolerance, "\(what): largest |Δp| \(worst)", sourceLocation: sourceLocation)
    #expect(
        abs(reference.reduce(0, +) - 1) < sumTolerance, "\(what): the reference sums to \(reference.reduce(0, +))", sourceLocation: sourceLocation)
}

@Suite("Text models in NumPy, as Docs/Text.md maps them to PyTorch modules")
struct TextModelMappingTests {
    @Test(
        "The NumPy mapping reproduces neuron sample's probabilities of the next character",
        arguments: [
            TrainedModel(layers: "[{kind: embedding, features: 8}, {kind: gru, units: 12}, {units: 27, activation: identity}]"),
            TrainedModel(layers: "[{kind: embedding, features: 8}, {kind: rnn, units: 12}, {units: 27, activation: identity}]"),
            TrainedModel(
                layers:
                    "[{kind: embedding, features: 6}, {kind: positionEmbedding}, {kind: context, size: 3}, {units: 16, activation: tanh}, {units: 27, activation: identity}]"
            ),
            TrainedModel(layers: "[{kind: embedding}]"),
            TrainedModel(layers: gpt), TrainedModel(layers: gptVariant),
            transformer(tied: false), transformer(tied: true),
        ])
    func nextCharacter(_ trained: TrainedModel) throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try requireSafetensors(in: directory)
        let swift = try engineProbabilities(try trainedCheckpoint(trained, in: directory), trained.prefixes)
        for (prefix, engine) in zip(trained.prefixes, swift) {
            let numpy = try JSONDecoder().decode(
                [Double].self, from: Data(try python(numpyNextCharacter, [directory.file("checkpoint.safetensors"), prefix], in: directory).utf8))
            expectAgreement(engine, numpy, tolerance: 2e-6, sumTolerance: 1e-9, "\(trained) after '\(prefix)'")
        }
        // A model that gave every prefix the same distribution would agree with a mapping that ignored the prefix.
        let spread = swift.dropFirst().map { p in zip(p, swift[0]).map { abs($0 - $1) }.max()! }.max()!
        #expect(spread > 0.01, "\(trained): the prefixes' distributions differ by at most \(spread)")
    }

    @Test("Docs/Text.md shows Docs/gpt_in_torch.py verbatim, the snippet the test below runs")
    func docShowsTheSnippet() throws {
        let doc = try String(contentsOfFile: docsDirectory + "/Text.md", encoding: .utf8)
        let snippet = try String(contentsOfFile: docsDirectory + "/gpt_in_torch.py", encoding: .utf8)
        let shown = doc.contains("```python\n" + snippet + "```\n")
        #expect(shown, "Docs/Text.md has no code block that is Docs/gpt_in_torch.py, whole")
    }

    /// Needs torch, which the package's venv does not have (CI holds the mapping to the NumPy walk
    /// above); runs where the benchmarks' peers venv is set up.
    @Test(
        "Docs/gpt_in_torch.py's torch module reproduces neuron sample's probabilities of the next character",
        .enabled(if: peersTorch != nil, "needs torch in the peers' venv (Benchmarks/peers/setup.sh)"),
        arguments: [TrainedModel(layers: gpt), transformer(tied: false), transformer(tied: true)])
    func torchSnippet(_ trained: TrainedModel) throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let snippet = try String(contentsOfFile: docsDirectory + "/gpt_in_torch.py", encoding: .utf8)
        let swift = try engineProbabilities(try trainedCheckpoint(trained, in: directory), trained.prefixes)
        for (prefix, engine) in zip(trained.prefixes, swift) {
            let output = try python(snippet, [directory.file("checkpoint.safetensors"), prefix], in: directory, executable: peersTorch!)
            let torch = try JSONDecoder().decode([Double].self, from: Data(output.utf8))
            expectAgreement(engine, torch, tolerance: 2e-6, sumTolerance: 1e-5, "torch, \(trained), after '\(prefix)'")
        }
    }
}

/// The repository's Docs folder.
private let docsDirectory = URL(fileURLWithPath: dataDirectory).deletingLastPathComponent().appendingPathComponent("Docs").path

/// The benchmarks' peers venv's Python (`$NEURON_PEERS_VENV`, default `~/.cache/neuron-peers`)
/// when it imports torch and safetensors, else nil.
private let peersTorch: String? = {
    let venv =
        ProcessInfo.processInfo.environment["NEURON_PEERS_VENV"]
        ?? (NSHomeDirectory() as NSString).appendingPathComponent(".cache/neuron-peers")
    let executable = (venv as NSString).appendingPathComponent("bin/python3")
    guard FileManager.default.isExecutableFile(atPath: executable), let directory = try? CheckpointTestDirectory() else { return nil }
    defer { directory.remove() }
    return (try? python("import torch, safetensors", in: directory, executable: executable)) != nil ? executable : nil
}()
