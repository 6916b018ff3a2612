"""Every random state training draws from, saved with each checkpoint so that a resumed run draws the
same dropout masks (and the same unseeded `keras.random` numbers) as an uninterrupted one."""


def _seed_states(model):
    """Dropout seed-generator states: not in `model.weights`, but needed to
    continue with the same random masks after a resume."""
    # Matched by order, not path: paths carry per-process name counters.
    return [v for v in model.variables if "seed_generator_state" in v.path]


def _global_seed_generator():
    # private API: keras exposes no reader of its global seed generator (what unseeded `keras.random`
    # calls draw from); its state has to be saved for a resume to draw the same numbers.
    from keras.src.backend.common import global_state

    return global_state.get_global_attribute("global_seed_generator")


def rng_state(model):
    """Every random state training draws from, as NumPy arrays: the model's
    seed generators, Keras' global one and, on PyTorch, torch's global
    generator (Keras' unseeded torch dropout and ours draw from it)."""
    import keras

    states = {f"state_{i}": keras.ops.convert_to_numpy(v) for i, v in enumerate(_seed_states(model))}
    generator = _global_seed_generator()
    if generator is not None:
        states["global_seed_generator"] = keras.ops.convert_to_numpy(generator.state)
    if keras.config.backend() == "torch":
        import torch

        states["torch_cpu"] = torch.get_rng_state().numpy()
        if torch.cuda.is_available():
            for i, s in enumerate(torch.cuda.get_rng_state_all()):
                states[f"torch_cuda_{i}"] = s.cpu().numpy()
    return states


def set_rng_state(model, states):
    """Sets the random states `rng_state` returned (of a model built the same way)."""
    import keras

    for i, variable in enumerate(_seed_states(model)):
        variable.assign(states[f"state_{i}"])
    generator = _global_seed_generator()
    if "global_seed_generator" in states and generator is not None:
        generator.state.assign(states["global_seed_generator"])
    if keras.config.backend() == "torch" and "torch_cpu" in states:
        import torch

        torch.set_rng_state(torch.from_numpy(states["torch_cpu"]))
        cuda = [torch.from_numpy(states[k]) for k in sorted(states) if k.startswith("torch_cuda_")]
        if cuda and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all(cuda)
