"""A multilayer perceptron in plain NumPy, forward and backward written out, float32 throughout.

Layout as in Neuron's exchange files: weight (inputs, outputs), row-major, y = x @ W + b.
Import only after peer_common.pin_threads (numpy reads the thread variables on import).
"""
import numpy as np

F32 = np.float32


class MLP:
    def __init__(self, layers, activations, loss):
        self.W = [np.array(w, dtype=F32, order="C", copy=True) for w, _ in layers]
        self.b = [np.array(b, dtype=F32, order="C", copy=True) for _, b in layers]
        self.acts = list(activations)
        self.loss = loss
        # momentum buffers, created on first use
        self.vW = None
        self.vb = None

    def params(self):
        return self.W + self.b

    # ---- forward -------------------------------------------------------------------------
    def forward(self, x):
        """Returns the list of layer outputs [x, a1, ..., aL]; for a softmax last layer aL holds
        the logits (softmax is fused into the loss)."""
        outs = [x]
        a = x
        for W, b, f in zip(self.W, self.b, self.acts):
            z = a @ W
            z += b
            if f == "tanh":
                np.tanh(z, out=z)
            elif f == "sigmoid":
                np.negative(z, out=z)
                np.exp(z, out=z)
                z += F32(1)
                np.reciprocal(z, out=z)
            elif f == "relu":
                np.maximum(z, F32(0), out=z)
            # identity and softmax: z as it is
            outs.append(z)
            a = z
        return outs

    def predict(self, x):
        return self.forward(x)[-1]

    # ---- loss and its gradient -----------------------------------------------------------
    def loss_and_delta(self, out, t):
        """Returns (mean loss as float32, dL/dz of the last layer)."""
        inv_n = F32(1.0 / out.shape[0])
        if self.loss == "softmaxCrossEntropy":
            shifted = out - out.max(axis=1, keepdims=True)
            e = np.exp(shifted)
            s = e.sum(axis=1, keepdims=True)
            loss = -(t * (shifted - np.log(s))).sum() * inv_n
            delta = e / s                      # softmax p
            delta -= t                         # (p - t) / batch
            delta *= inv_n
        else:  # halfSquaredError: sum over outputs of (y - t)^2 / 2, mean over the batch
            diff = out - t
            loss = F32(0.5) * (diff * diff).sum() * inv_n
            delta = diff * inv_n               # (y - t) / batch
            self._times_derivative(delta, self.acts[-1], out)
        return loss, delta

    @staticmethod
    def _times_derivative(delta, f, y):
        """delta *= f'(z), written with the layer's saved output y = f(z)."""
        if f == "tanh":
            delta *= F32(1) - y * y
        elif f == "sigmoid":
            delta *= y * (F32(1) - y)
        elif f == "relu":
            delta *= y > 0
        # identity: derivative 1

    # ---- one training step ---------------------------------------------------------------
    def gradients(self, x, t):
        outs = self.forward(x)
        loss, delta = self.loss_and_delta(outs[-1], t)
        gW = [None] * len(self.W)
        gb = [None] * len(self.W)
        for i in range(len(self.W) - 1, -1, -1):
            gW[i] = outs[i].T @ delta
            gb[i] = delta.sum(axis=0)          # bias gradient: column sums
            if i > 0:                          # no input gradient for the first layer
                delta = delta @ self.W[i].T
                self._times_derivative(delta, self.acts[i - 1], outs[i])
        return loss, gW, gb

    def sgd_step(self, x, t, lr):
        """Plain SGD, p -= lr * grad, in place. Returns the loss before the update."""
        lr = F32(lr)
        loss, gW, gb = self.gradients(x, t)
        for W, g in zip(self.W, gW):
            g *= lr
            W -= g
        for b, g in zip(self.b, gb):
            g *= lr
            b -= g
        return loss

    def momentum_step(self, x, t, lr, mu):
        """SGD with momentum, PyTorch's formula: v = mu*v + g (v starts at g); p -= lr*v."""
        lr = F32(lr)
        mu = F32(mu)
        loss, gW, gb = self.gradients(x, t)
        if self.vW is None:
            self.vW = [g.copy() for g in gW]
            self.vb = [g.copy() for g in gb]
        else:
            for v, g in zip(self.vW + self.vb, gW + gb):
                v *= mu
                v += g
        for p, v in zip(self.W + self.b, self.vW + self.vb):
            p -= lr * v
        return loss

    def check_dtypes(self, x, t):
        """Raises if any intermediate of a step is not float32 (run once, untimed)."""
        outs = self.forward(x)
        loss, delta = self.loss_and_delta(outs[-1], t)
        _, gW, gb = self.gradients(x, t)
        arrays = outs + [delta] + gW + gb + self.W + self.b
        bad = [a.dtype for a in arrays if a.dtype != F32]
        if bad or np.asarray(loss).dtype != F32:
            raise TypeError(f"non-float32 values in the NumPy step: {bad or np.asarray(loss).dtype}")
