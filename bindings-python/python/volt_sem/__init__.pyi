from ._volt_sem import MAX_PERMITS as MAX_PERMITS
from ._volt_sem import Acquire as Acquire
from ._volt_sem import ClosedError as ClosedError
from ._volt_sem import Mutex as Mutex
from ._volt_sem import RwLock as RwLock
from ._volt_sem import Semaphore as Semaphore
from ._volt_sem import __version__ as __version__

__all__ = ["MAX_PERMITS", "Acquire", "ClosedError", "Mutex", "RwLock", "Semaphore", "__version__"]
