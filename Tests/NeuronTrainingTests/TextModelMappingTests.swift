import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

/// Docs/Text.md's PyTorch mapping of a text model's checkpoint, written out in NumPy: the
/// vocabulary from the run state, `nn.Embedding` rows, a position table added, Bengio's context
/// concatenated, `nn.Linear` at each position, `nn.RNN` and `nn.GRU` (PyTorch's equations, gate order
/// r, z, n, the learned `h0` as `hx`), then the softmax of the last position's scores: the
/// probabilities of the character after the prefix. Computed in float64 from the stored tensors.
private let numpyNextCharacter = #"""
    import json, sys
    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load_file

    path, prefix = sys.argv[1], sys.argv[2]
    t = {k: v.astype(np.float64) for k, v in load_file(path).items()}
    with safe_open(path, framework="np") as f:
        state = json.loads(f.metadata()["neuron.state"])
    vocabulary = state["vocabulary"]                   # token i is vocabulary[i]; "" is the boundary
    tokens = [0] + [vocabulary.index(c) for c in prefix]
    sigmoid = lambda z: 1 / (1 + np.exp(-z))
    activations = {"tanh": np.tanh, "sigmoid": sigmoid, "relu": lambda z: np.maximum(z, 0), "identity": lambda z: z}
    h = None
    for i, layer in enumerate(state["config"]["model"]["layers"]):
        kind, p = layer.get("kind", "dense"), (lambda name, i=i: t[f"layers.{i}.{name}"])
        if kind == "embedding":                        # nn.Embedding
            h = p("weight")[tokens]
        elif kind == "positionEmbedding":              # a learned row per position, added
            h = h + p("weight")[: len(h)]
        elif kind == "context":                        # the last `size` positions' vectors, oldest first, zeros before the start
            k = layer["size"]
            padded = np.vstack([np.zeros((k - 1, h.shape[1])), h])
            h = np.hstack([padded[j : j + len(h)] for j in range(k)])
        elif kind == "dense":                          # nn.Linear at every position
            h = activations[layer.get("activation", "tanh")](h @ p("weight").T + p("bias"))
        elif kind in ("rnn", "gru"):                   # nn.RNN / nn.GRU, hx = h0
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
    scores = h[-1]
    e = np.exp(scores - scores.max())
    print(json.dumps((e / e.sum()).tolist()))
    """#

@Suite("Text models in NumPy, as Docs/Text.md maps them to PyTorch modules")
struct TextModelMappingTests {
    @Test(
        "The NumPy mapping reproduces neuron sample's probabilities of the next character",
        arguments: [
            "[{kind: embedding, features: 8}, {kind: gru, units: 12}, {units: 27, activation: identity}]",
            "[{kind: embedding, features: 8}, {kind: rnn, units: 12}, {units: 27, activation: identity}]",
            "[{kind: embedding, features: 6}, {kind: positionEmbedding}, {kind: context, size: 3}, {units: 16, activation: tanh}, {units: 27, activation: identity}]",
            "[{kind: embedding}]",
        ])
    func nextCharacter(layers: String) throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        try requireSafetensors(in: directory)
        let config = try config(
            """
            model: {layers: \(layers)}
            data: {kind: text, path: words-small.txt}
            optimizer: {kind: adam, learningRate: 0.01}
            training: {epochs: 1, batchSize: 32, seed: 11}
            """)
        let run = try RunBuilder.build(config)
        var engine = try #require(run.engine as? NetworkTrainingEngine<Float, Adam<Float>>)
        while engine.stepsTaken < engine.totalSteps { _ = engine.step() }
        try Checkpoint(engine, config: config, preprocessing: run.preprocessing).write(to: directory.path)
        let saved = try Checkpoint.read(directory.path)
        let vocabulary = try #require(saved.state.vocabulary)
        var network = try Prediction<Float>.network(saved)
        for prefix in ["", "q", "th", "unbelievab"] {
            let swift = try network.nextTokenProbabilities(
                after: [Vocabulary.boundary] + vocabulary.encode(prefix)!, rule: try SamplingRule())
            let numpy = try JSONDecoder().decode(
                [Double].self, from: Data(try python(numpyNextCharacter, [directory.file("checkpoint.safetensors"), prefix], in: directory).utf8))
            #expect(numpy.count == 27 && swift.count == 27)
            let worst = zip(swift, numpy).map { abs($0 - $1) }.max() ?? .infinity
            #expect(worst < 2e-6, "\(layers) after '\(prefix)': largest |Δp| \(worst)")
            #expect(abs(numpy.reduce(0, +) - 1) < 1e-9)
        }
    }
}
