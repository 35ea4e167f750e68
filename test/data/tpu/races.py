"""Kernels over 4 devices (shard_map over the mesh axis "x", one (8, 128)
float32 block each), written once for `jax` and `ember`: with and without
data races between devices' remote DMAs. Ember's checked interpreter
(test_tpu_interpret.py) and JAX's (`InterpretParams(detect_races=True)`,
tools/tpu/jax_races.py) must agree on which race."""


def kernels(jax, jnp, pl, pltpu):
    """{name: (kernel, scratch shapes)}."""
    ids = dict(device_id_type=pltpu.DeviceIdType.MESH)

    def ring(every_step):
        # The double-buffered ring all-reduce; the "ready" handshake with
        # the right neighbour before every copy, or only at the start.
        def kernel(x_ref, o_ref, buf, send_sem, recv_sem, ready):
            n = 4
            me = jax.lax.axis_index("x")
            right, left = jax.lax.rem(me + 1, n), jax.lax.rem(me + n - 1, n)
            if not every_step:
                pltpu.semaphore_signal(ready, 1, device_id=(left,), **ids)
                pltpu.semaphore_wait(ready, 1)
            o_ref[...] = x_ref[...]
            buf[0] = x_ref[...]
            for step in range(n - 1):
                s = step % 2
                if every_step:
                    pltpu.semaphore_signal(ready, 1, device_id=(left,), **ids)
                    pltpu.semaphore_wait(ready, 1)
                copy = pltpu.make_async_remote_copy(buf.at[s], buf.at[1 - s], send_sem,
                                                    recv_sem, device_id=(right,), **ids)
                copy.start()
                copy.wait()
                o_ref[...] += buf[1 - s]

        return kernel, [pltpu.VMEM((2, 8, 128), jnp.float32), pltpu.SemaphoreType.DMA,
                        pltpu.SemaphoreType.DMA, pltpu.SemaphoreType.REGULAR]

    # A send buffer, a receive buffer and their semaphores per device.
    pair = [pltpu.VMEM((8, 128), jnp.float32), pltpu.VMEM((8, 128), jnp.float32),
            pltpu.SemaphoreType.DMA, pltpu.SemaphoreType.DMA]

    def send_right(x_ref, sbuf, rbuf, send, recv):
        me = jax.lax.axis_index("x")
        sbuf[...] = x_ref[...]
        c = pltpu.make_async_remote_copy(sbuf, rbuf, send, recv,
                                         device_id=(jax.lax.rem(me + 1, 4),), **ids)
        c.start()
        return c

    def exchange(x_ref, o_ref, sbuf, rbuf, send, recv):
        send_right(x_ref, sbuf, rbuf, send, recv).wait()
        o_ref[...] = rbuf[...] + 1

    def read_before_wait(x_ref, o_ref, sbuf, rbuf, send, recv):
        c = send_right(x_ref, sbuf, rbuf, send, recv)
        c.wait_send()
        o_ref[...] = rbuf[...]  # the left neighbour's copy may not have landed
        c.wait_recv()

    def overwrite_before_send(x_ref, o_ref, sbuf, rbuf, send, recv):
        c = send_right(x_ref, sbuf, rbuf, send, recv)
        sbuf[...] = jnp.zeros((8, 128), jnp.float32)  # the copy may still read it
        c.wait()
        o_ref[...] = rbuf[...]

    def reuse_without_handshake(x_ref, o_ref, sbuf, rbuf, send, recv):
        # Two rounds into the same receive buffer: the second copy may land
        # before the right neighbour read the first.
        c = send_right(x_ref, sbuf, rbuf, send, recv)
        c.wait()
        o_ref[...] = rbuf[...]
        c = send_right(x_ref, sbuf, rbuf, send, recv)
        c.wait()
        o_ref[...] += rbuf[...]

    return {
        "ring_every_step": ring(True),
        "ring_start_only": ring(False),
        "exchange": (exchange, pair),
        "read_before_wait": (read_before_wait, pair),
        "overwrite_before_send": (overwrite_before_send, pair),
        "reuse_without_handshake": (reuse_without_handshake, pair),
    }


def on_devices(jax, pallas_call, kernel, scratch):
    """The kernel on each of 4 devices' (8, 128) row blocks (shard_map),
    called by `pallas_call` (given its `interpret=`)."""
    mesh = jax.make_mesh((4,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
    P = jax.sharding.PartitionSpec

    def per_device(block):
        return pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(block.shape, block.dtype),
                           scratch_shapes=scratch)(block)

    return jax.shard_map(per_device, mesh=mesh, in_specs=P("x"), out_specs=P("x"),
                         check_vma=False)
