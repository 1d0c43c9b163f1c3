"""A multilayer perceptron in plain NumPy, forward and backward written out, float32 throughout,
as lean as NumPy allows: every buffer of a step is allocated once per batch size (a workspace),
every operation writes into one of them (`out=` arguments, in-place operators), and the SGD
update is folded into the backward pass, so a step of a seen batch size makes no temporary arrays.

Layout as in Neuron's exchange files: weight (inputs, outputs), row-major, y = x @ W + b.
Import only after peer_common.pin_threads (numpy reads the thread variables on import).
"""
import numpy as np

F32 = np.float32


class Workspace:
    """The buffers of one batch size: outputs, deltas and scratch per layer, the loss head's rows."""

    def __init__(self, batch, sizes):
        layers = len(sizes) - 1
        self.out = [np.empty((batch, n), F32) for n in sizes[1:]]          # a_l (logits for softmax)
        self.delta = [np.empty((batch, n), F32) for n in sizes[1:]]        # dL/dz_l
        self.scratch = [np.empty((batch, n), F32) for n in sizes[1:]]      # f'(z_l) from a_l
        self.mask = [np.empty((batch, n), np.bool_) for n in sizes[1:]]    # relu: a_l <= 0
        self.row = np.empty((batch, 1), F32)       # row maximum, then log-sum-exp
        self.row_sum = np.empty((batch, 1), F32)   # Σ exp, then Σ t per row
        self.layers = layers


class MLP:
    def __init__(self, layers, activations, loss):
        self.W = [np.array(w, dtype=F32, order="C", copy=True) for w, _ in layers]
        self.b = [np.array(b, dtype=F32, order="C", copy=True) for _, b in layers]
        self.gW = [np.empty_like(w) for w in self.W]
        self.gb = [np.empty_like(b) for b in self.b]
        self.sizes = [self.W[0].shape[0]] + [w.shape[1] for w in self.W]
        self.acts = list(activations)
        self.loss = loss
        self.spaces = {}
        # momentum buffers, created on first use
        self.vW = None
        self.vb = None

    def params(self):
        return self.W + self.b

    def _space(self, batch):
        ws = self.spaces.get(batch)
        if ws is None:
            ws = self.spaces[batch] = Workspace(batch, self.sizes)
        return ws

    # ---- forward -------------------------------------------------------------------------
    def forward(self, x):
        """Runs the batch; returns the workspace, whose out[-1] holds the last layer's output
        (for a softmax last layer, the logits: softmax is fused into the loss)."""
        ws = self._space(x.shape[0])
        a = x
        for W, b, f, z in zip(self.W, self.b, self.acts, ws.out):
            np.matmul(a, W, out=z)
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
            a = z
        return ws

    def predict(self, x):
        return self.forward(x).out[-1]

    # ---- loss and its gradient -----------------------------------------------------------
    def _loss_and_delta(self, ws, t):
        """The mean loss (float32) of the forward pass in ws; dL/dz of the last layer into ws.delta[-1]."""
        out, delta = ws.out[-1], ws.delta[-1]
        inv_n = F32(1.0 / out.shape[0])
        if self.loss == "softmaxCrossEntropy":
            # -Σ t·(z - lse) = Σ_r lse_r·(Σ_j t_rj) - Σ t·z, with lse = m + log Σ exp(z - m)
            m, s = ws.row, ws.row_sum
            np.max(out, axis=1, keepdims=True, out=m)
            np.subtract(out, m, out=delta)
            np.exp(delta, out=delta)
            np.sum(delta, axis=1, keepdims=True, out=s)
            delta /= s                                 # p = softmax(z)
            np.log(s, out=s)
            m += s                                     # lse
            np.sum(t, axis=1, keepdims=True, out=s)    # Σ t per row
            loss = (np.vdot(m, s) - np.vdot(t, out)) * inv_n
            delta -= t                                 # (p - t) / batch
            delta *= inv_n
        else:  # halfSquaredError: Σ over outputs of (y - t)^2 / 2, mean over the batch
            np.subtract(out, t, out=delta)
            loss = F32(0.5) * np.vdot(delta, delta) * inv_n
            delta *= inv_n                             # (y - t) / batch
            self._times_derivative(ws, len(self.W) - 1)
        return F32(loss)

    def _times_derivative(self, ws, i):
        """ws.delta[i] *= f'(z_i), written with the layer's saved output y = f(z_i)."""
        f, y, delta, tmp = self.acts[i], ws.out[i], ws.delta[i], ws.scratch[i]
        if f == "tanh":                                # 1 - y²
            np.multiply(y, y, out=tmp)
            np.subtract(F32(1), tmp, out=tmp)
            delta *= tmp
        elif f == "sigmoid":                           # y (1 - y)
            np.subtract(F32(1), y, out=tmp)
            tmp *= y
            delta *= tmp
        elif f == "relu":                              # y > 0
            np.less_equal(y, F32(0), out=ws.mask[i])
            np.copyto(delta, F32(0), where=ws.mask[i])
        # identity: derivative 1

    # ---- one training step ---------------------------------------------------------------
    def _backward(self, ws, x, lr):
        """Backward from ws.delta[-1]. With lr None, the gradients go into gW/gb; with a learning
        rate, each layer's delta is scaled by it once its input gradient is formed, and the
        products p -= lr·grad are applied at once (the layer's weights are not read again)."""
        for i in range(len(self.W) - 1, -1, -1):
            delta = ws.delta[i]
            if i > 0:                                  # no input gradient for the first layer
                np.matmul(delta, self.W[i].T, out=ws.delta[i - 1])
                self._times_derivative(ws, i - 1)
            if lr is not None:
                delta *= lr
            a = x if i == 0 else ws.out[i - 1]
            np.matmul(a.T, delta, out=self.gW[i])
            np.sum(delta, axis=0, out=self.gb[i])      # bias gradient: column sums
            if lr is not None:
                self.W[i] -= self.gW[i]
                self.b[i] -= self.gb[i]

    def gradients(self, x, t):
        """The loss; the gradients into gW, gb (not applied)."""
        ws = self.forward(x)
        loss = self._loss_and_delta(ws, t)
        self._backward(ws, x, None)
        return loss, self.gW, self.gb

    def sgd_step(self, x, t, lr):
        """Plain SGD, p -= lr * grad, in place. Returns the loss before the update."""
        ws = self.forward(x)
        loss = self._loss_and_delta(ws, t)
        self._backward(ws, x, F32(lr))
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
        for p, v, g in zip(self.W + self.b, self.vW + self.vb, gW + gb):
            np.multiply(v, lr, out=g)                  # the gradient buffer as scratch
            p -= g
        return loss

    def check_dtypes(self, x, t):
        """Raises if any buffer of a step is not float32 (run once, untimed)."""
        loss, gW, gb = self.gradients(x, t)
        ws = self._space(x.shape[0])
        arrays = ws.out + ws.delta + ws.scratch + gW + gb + self.W + self.b
        bad = [a.dtype for a in arrays if a.dtype != F32]
        if bad or np.asarray(loss).dtype != F32:
            raise TypeError(f"non-float32 values in the NumPy step: {bad or np.asarray(loss).dtype}")
