"""The rules the core checks reach Python users with the contract's types and the texts they
had: a device's range, num_sms's range, a partition on another device, backfill only last."""

from ._sim import needs_sim, run_on_sim


@needs_sim
def test_the_cores_rules_through_the_python_api():
    out = run_on_sim(
        """
        from torch_green_contexts import GreenContext, SMPartition

        def fails(kind, text, call):
            try:
                call()
            except kind as error:
                assert type(error) is kind and str(error) == text, (type(error), str(error))
            else:
                raise AssertionError("no " + kind.__name__)

        out_of_range = "device_id {} is out of range: this machine has 1 CUDA device (valid device_id: 0..0)"
        for call in (lambda: GreenContext(num_sms=8, device_id=3), lambda: SMPartition.from_device(3),
                     lambda: GreenContext.split(num_sms=(8, 8), device_id=3),
                     lambda: GreenContext(workqueue_scope="device_ctx", device_id=3)):
            fails(RuntimeError, out_of_range.format(3), call)
        for count in (0, -3, 133, 1 << 40):
            fails(RuntimeError, "num_sms must be between 1 and 132 (the SM count of device 0), got {}".format(count),
                  lambda: GreenContext(num_sms=count, device_id=0))
        whole = SMPartition.from_device(0)
        fails(ValueError, "device_id=2 disagrees with the sm_partition's device (0); omit device_id or pass device_id=0",
              lambda: GreenContext(sm_partition=whole, device_id=2))
        fails(ValueError, "device_id={0} disagrees with the sm_partition's device (0); omit device_id or pass "
              "device_id=0".format(1 << 32), lambda: GreenContext(sm_partition=whole, device_id=1 << 32))
        assert GreenContext(sm_partition=whole, device_id=0).sm_count == 132
        last = "group 0: num_sms=0 with backfill=True takes all remaining SMs, so it may only be the last group (there are 2 groups)"
        fails(ValueError, last, lambda: whole.split(num_sms=(0, 16), backfill=(True, False)))
        fails(ValueError, last, lambda: GreenContext.split(num_sms=(0, 16), backfill=(True, False), device_id=0))
        fails(ValueError, "workqueue_scope must be one of 'device_ctx', 'balanced' or None, got 'shared'",
              lambda: GreenContext(num_sms=8, workqueue_scope="shared"))
        print("ok")
        """,
        version=13040,
    )
    assert out.strip() == "ok"
